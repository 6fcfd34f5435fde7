import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as zlib from "node:zlib"
import * as Web from "../src/Web.js"
import * as WebLogin from "../src/WebLogin.js"
import { serve } from "./support.js"

describe("Web.route", () => {
  const cases: ReadonlyArray<[string, string, Web.WebRoute["kind"]]> = [
    ["GET", "/", "page"],
    ["HEAD", "/", "page"],
    ["GET", "/approvals", "page"],
    ["GET", "/sessions/ses_abc", "page"],
    ["GET", "/sessions/ses_abc/changes", "page"],
    ["GET", "/permission/per_123", "page"],
    ["GET", "/permission", "api"],
    ["POST", "/permission/per_123/reply", "api"],
    ["GET", "/session/ses_abc", "api"],
    ["GET", "/event", "api"],
    ["POST", "/", "api"],
    ["GET", "/assets/app.js", "asset"],
    ["GET", "/assets/../secret", "api"],
    ["GET", "/login", "login"],
    ["POST", "/login", "login"],
    ["POST", "/logout", "logout"],
    ["GET", "/logout", "api"]
  ]
  for (const [method, pathname, kind] of cases) it(`${method} ${pathname}: ${kind}`, () => expect(Web.route(method, pathname).kind).toBe(kind))
})

describe("Web.pickEncoding", () => {
  const all = new Set<Web.Encoding>(["identity", "br", "gzip"])
  const cases: ReadonlyArray<[string | undefined, ReadonlySet<Web.Encoding>, Web.Encoding]> = [
    ["gzip, deflate, br, zstd", all, "br"],
    ["gzip", all, "gzip"],
    ["br;q=0, gzip", all, "gzip"],
    ["*", all, "gzip"],
    [undefined, all, "identity"],
    ["br", new Set<Web.Encoding>(["identity", "gzip"]), "identity"]
  ]
  for (const [header, available, expected] of cases) it(`${header}: ${expected}`, () => expect(Web.pickEncoding(header, available)).toBe(expected))
})

describe("WebLogin", () => {
  it("sends a login on only to a path of this server", () => {
    expect(WebLogin.safeNext("/sessions/ses_1")).toBe("/sessions/ses_1")
    expect(WebLogin.safeNext("//evil.example/")).toBe("/")
    expect(WebLogin.safeNext("/\\evil.example")).toBe("/")
    expect(WebLogin.safeNext("https://evil.example/")).toBe("/")
    expect(WebLogin.safeNext(null)).toBe("/")
  })
  it("reads one cookie among others; tokens depend on the key and the credentials", () => {
    expect(WebLogin.cookieValue("a=1; agent_auth=xyz; b=2", "agent_auth")).toBe("xyz")
    expect(WebLogin.cookieValue("agent_authx=1", "agent_auth")).toBeUndefined()
    const key = WebLogin.newKey()
    const token = WebLogin.makeToken(key, { username: "agent", password: "pw" })
    expect(WebLogin.makeToken(key, { username: "agent", password: "pw" })).toBe(token)
    expect(WebLogin.makeToken(key, { username: "agent", password: "pw2" })).not.toBe(token)
    expect(WebLogin.makeToken(WebLogin.newKey(), { username: "agent", password: "pw" })).not.toBe(token)
  })
  it("escapes the next path in the login form", () => {
    expect(WebLogin.loginPage({ next: '/"><script>', failed: true })).toContain('value="/&quot;&gt;&lt;script&gt;"')
  })
})

/** A built page of three files, so these tests do not depend on the web package's build. */
const fakeBuild = () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "agent-web-"))
  fs.mkdirSync(path.join(root, "assets"))
  fs.writeFileSync(path.join(root, "index.html"), "<!doctype html><title>agent</title><script type=module src=/assets/app.js></script>")
  fs.writeFileSync(path.join(root, "assets", "app.js"), "console.log('page')")
  fs.writeFileSync(path.join(root, "assets", "app.js.gz"), zlib.gzipSync("console.log('page')"))
  fs.writeFileSync(path.join(root, "assets", "app.js.br"), zlib.brotliCompressSync("console.log('page')"))
  return root
}

const manual = { redirect: "manual" } as const

describe("the page in agent serve", () => {
  it.scoped("with a password: page paths go to the login form, whose cookie opens the page and the API", () =>
    Effect.gen(function*() {
      const root = fakeBuild()
      const { url } = yield* serve({ model: ScriptedModel.make([]), server: { password: "s3cret", web: { root } } })
      const page = yield* Effect.promise(() => fetch(`${url}/permission/per_1`, manual))
      expect(page.status).toBe(303)
      expect(page.headers.get("location")).toBe("/login?next=%2Fpermission%2Fper_1")
      const form = yield* Effect.promise(() => fetch(`${url}/login?next=%2Fapprovals`).then((response) => response.text()))
      expect(form).toContain('<form class="login-form" method="post" action="/login">')
      expect(form).toContain('value="/approvals"')
      const post = (body: string) =>
        Effect.promise(() =>
          fetch(`${url}/login`, { ...manual, method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body })
        )
      const wrong = yield* post("username=agent&password=nope&next=%2Fapprovals")
      expect(wrong.status).toBe(303)
      expect(wrong.headers.get("location")).toBe("/login?failed=1&next=%2Fapprovals")
      expect(wrong.headers.get("set-cookie")).toBeNull()
      const right = yield* post("username=agent&password=s3cret&next=%2Fapprovals")
      expect(right.headers.get("location")).toBe("/approvals")
      const cookie = right.headers.get("set-cookie")!
      expect(cookie).toMatch(/^agent_auth=[\w-]+; Path=\/; HttpOnly; SameSite=Strict$/)
      const jar = cookie.split(";")[0]!
      const opened = yield* Effect.promise(() => fetch(`${url}/approvals`, { headers: { cookie: jar } }))
      expect(opened.status).toBe(200)
      expect(opened.headers.get("content-security-policy")).toBe(Web.CONTENT_SECURITY_POLICY)
      expect(yield* Effect.promise(() => opened.text())).toContain("/assets/app.js")
      const api = yield* Effect.promise(() => fetch(`${url}/session`, { headers: { cookie: jar } }))
      expect(api.status).toBe(200)
      // Without the cookie the API is closed as before; the page's own requests get no Basic challenge.
      const closed = yield* Effect.promise(() => fetch(`${url}/session`))
      expect(closed.status).toBe(401)
      expect(closed.headers.get("www-authenticate")).toBe('Basic realm="agent"')
      const fromPage = yield* Effect.promise(() => fetch(`${url}/session`, { headers: { "x-agent-client": "web" } }))
      expect(fromPage.status).toBe(401)
      expect(fromPage.headers.get("www-authenticate")).toBeNull()
      // A forged cookie opens nothing.
      const forged = yield* Effect.promise(() => fetch(`${url}/session`, { headers: { cookie: "agent_auth=AAAA" } }))
      expect(forged.status).toBe(401)
      const out = yield* Effect.promise(() => fetch(`${url}/logout`, { ...manual, method: "POST", headers: { cookie: jar } }))
      expect(out.headers.get("set-cookie")).toContain("Max-Age=0")
    }))

  it.scoped("assets go out precompressed, with an ETag; a page of another origin is refused as before", () =>
    Effect.gen(function*() {
      const root = fakeBuild()
      const { url } = yield* serve({ model: ScriptedModel.make([]), server: { web: { root } } })
      const br = yield* Effect.promise(() => fetch(`${url}/assets/app.js`, { headers: { "accept-encoding": "br" } }))
      expect(br.headers.get("content-encoding")).toBe("br")
      expect(br.headers.get("vary")).toBe("accept-encoding")
      expect(yield* Effect.promise(() => br.text())).toBe("console.log('page')")
      const gzip = yield* Effect.promise(() => fetch(`${url}/assets/app.js`, { headers: { "accept-encoding": "gzip" } }))
      expect(gzip.headers.get("content-encoding")).toBe("gzip")
      expect(yield* Effect.promise(() => gzip.text())).toBe("console.log('page')")
      const plain = yield* Effect.promise(() => fetch(`${url}/assets/app.js`, { headers: { "accept-encoding": "identity" } }))
      expect(plain.headers.get("content-encoding")).toBeNull()
      expect(yield* Effect.promise(() => plain.text())).toBe("console.log('page')")
      const etag = plain.headers.get("etag")!
      const again = yield* Effect.promise(() => fetch(`${url}/assets/app.js`, { headers: { "if-none-match": etag } }))
      expect(again.status).toBe(304)
      const missing = yield* Effect.promise(() => fetch(`${url}/assets/nothing.js`))
      expect(missing.status).toBe(404)
      const foreign = yield* Effect.promise(() => fetch(`${url}/`, { headers: { origin: "http://evil.example" } }))
      expect(foreign.status).toBe(403)
    }))

  it.scoped("web: false (agent serve --no-web) serves the API only", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ model: ScriptedModel.make([]), server: { web: false } })
      const root = yield* Effect.promise(() => fetch(`${url}/`))
      expect(root.status).toBe(404)
      expect(yield* Effect.promise(() => root.json())).toMatchObject({ name: "NotFoundError" })
      const api = yield* Effect.promise(() => fetch(`${url}/session`))
      expect(api.status).toBe(200)
    }))
})
