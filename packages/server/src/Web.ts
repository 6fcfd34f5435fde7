/**
 * The page `agent serve` serves at `/` (docs/web.md): static files built by packages/web at build
 * time, read from its dist/ directory and answered precompressed (brotli or gzip). Page paths
 * answer the page's HTML under a strict Content-Security-Policy; everything else goes on to the
 * API unchanged. With a password, page paths send a browser without credentials to a login form
 * whose cookie the API accepts like Basic auth (see WebLogin.ts).
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Option } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as WebLogin from "./WebLogin.js"

export interface WebOptions {
  /** The built page (default: packages/web/dist beside this package, in the checkout and in the CLI bundle). */
  readonly root?: string
}

export const defaultRoot = (): string => fileURLToPath(new URL("../../web/dist", import.meta.url))

/** No inline script or style, nothing from another origin, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

const PAGE_HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  // Not no-referrer: Chromium then sends `Origin: null` with the login form, which the origin check refuses.
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "cache-control": "no-cache"
}

/** What a GET path is to the web page: one of its views, a built file, the login, or not the page's. */
export type WebRoute =
  | { readonly kind: "page" }
  | { readonly kind: "asset"; readonly name: string }
  | { readonly kind: "login" }
  | { readonly kind: "logout" }
  | { readonly kind: "api" }

/**
 * Which requests the page answers. Its views avoid the API's paths: `/sessions/<id>` (the API's is
 * `/session`), and `/permission/<id>` is a link a webhook can send (the API has only POST under it).
 */
export const route = (method: string, pathname: string): WebRoute => {
  const read = method === "GET" || method === "HEAD"
  if (pathname === "/login" && (read || method === "POST")) return { kind: "login" }
  if (pathname === "/logout" && method === "POST") return { kind: "logout" }
  if (!read) return { kind: "api" }
  if (pathname === "/" || pathname === "/approvals" || pathname === "/sessions") return { kind: "page" }
  if (/^\/sessions\/[\w-]+(\/changes)?$/.test(pathname)) return { kind: "page" }
  if (/^\/permission\/[\w-]+$/.test(pathname)) return { kind: "page" }
  const asset = /^\/assets\/([\w-]+(?:\.[\w-]+)*)$/.exec(pathname)
  if (asset) return { kind: "asset", name: asset[1]! }
  return { kind: "api" }
}

export type Encoding = "br" | "gzip" | "identity"

/** The best encoding the client accepts among those the file has (brotli, then gzip). */
export const pickEncoding = (acceptEncoding: string | undefined, available: ReadonlySet<Encoding>): Encoding => {
  const accepted = new Set(
    (acceptEncoding ?? "").split(",").map((entry) => entry.trim().toLowerCase())
      .filter((entry) => !/;\s*q=0(\.0*)?$/.test(entry)).map((entry) => entry.split(";")[0]!.trim())
  )
  if (available.has("br") && accepted.has("br")) return "br"
  if (available.has("gzip") && (accepted.has("gzip") || accepted.has("*"))) return "gzip"
  return "identity"
}

const CONTENT_TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".png": "image/png"
}

interface BuiltFile {
  readonly contentType: string
  readonly etag: string
  readonly bodies: ReadonlyMap<Encoding, Uint8Array>
}

/** Reads a built file and its precompressed siblings (`.br`, `.gz`) once; undefined when it is not there. */
const readBuilt = (root: string, relative: string): BuiltFile | undefined => {
  const file = path.join(root, relative)
  if (!fs.existsSync(file)) return undefined
  const bodies = new Map<Encoding, Uint8Array>([["identity", fs.readFileSync(file)]])
  if (fs.existsSync(`${file}.br`)) bodies.set("br", fs.readFileSync(`${file}.br`))
  if (fs.existsSync(`${file}.gz`)) bodies.set("gzip", fs.readFileSync(`${file}.gz`))
  const etag = `"${createHash("sha256").update(bodies.get("identity")!).digest("base64url").slice(0, 22)}"`
  return { contentType: CONTENT_TYPES[path.extname(file)] ?? "application/octet-stream", etag, bodies }
}

export interface WebAuth {
  /** Whether the request carries the server's credentials (Basic, `auth_token` or the login cookie). */
  readonly authorized: (request: HttpServerRequest.HttpServerRequest) => boolean
  /** Present when the server has a password. */
  readonly credentials?: WebLogin.Credentials
  readonly token?: string
}

const formOf = (text: string) => new URLSearchParams(text)
const LOGIN_MAX_BYTES = 16 * 1024

/** Serves the page's paths and passes every other request to `app` (the API). */
export const middleware = (options: WebOptions, auth: WebAuth) => {
  const root = options.root ?? defaultRoot()
  // Read on first use and kept: the built files do not change while the server runs.
  const cache = new Map<string, BuiltFile | undefined>()
  const built = (relative: string) => {
    if (!cache.has(relative)) cache.set(relative, readBuilt(root, relative))
    return cache.get(relative)
  }

  const send = (request: HttpServerRequest.HttpServerRequest, file: BuiltFile, extra: Record<string, string>) => {
    const headers: Record<string, string> = { etag: file.etag, vary: "accept-encoding", ...extra }
    if (request.headers["if-none-match"] === file.etag) return HttpServerResponse.empty({ status: 304, headers })
    const encoding = pickEncoding(request.headers["accept-encoding"], new Set(file.bodies.keys()))
    if (encoding !== "identity") headers["content-encoding"] = encoding
    const body = file.bodies.get(encoding)!
    return request.method === "HEAD"
      ? HttpServerResponse.empty({ status: 200, headers: { ...headers, "content-type": file.contentType } })
      : HttpServerResponse.uint8Array(body, { status: 200, headers, contentType: file.contentType })
  }

  const html = (text: string, status = 200) =>
    HttpServerResponse.text(text, { status, contentType: "text/html; charset=utf-8", headers: PAGE_HEADERS })

  const redirect = (location: string, extra: Record<string, string> = {}) =>
    HttpServerResponse.empty({ status: 303, headers: { location, "cache-control": "no-store", ...extra } })

  const login = (request: HttpServerRequest.HttpServerRequest, url: URL) =>
    Effect.gen(function*() {
      const credentials = auth.credentials
      if (credentials === undefined || auth.token === undefined) return redirect(WebLogin.safeNext(url.searchParams.get("next")))
      if (request.method !== "POST") {
        return html(WebLogin.loginPage({ next: WebLogin.safeNext(url.searchParams.get("next")), failed: url.searchParams.has("failed") }))
      }
      const length = Number(request.headers["content-length"] ?? 0)
      if (length > LOGIN_MAX_BYTES) return HttpServerResponse.text(`login form too large: ${length} bytes, the limit is ${LOGIN_MAX_BYTES}`, { status: 413 })
      const form = formOf(yield* request.text.pipe(HttpIncomingMessage.withMaxBodySize(Option.some(LOGIN_MAX_BYTES))))
      const next = WebLogin.safeNext(form.get("next"))
      const given = { username: form.get("username") ?? "", password: form.get("password") ?? "" }
      const ok = WebLogin.sameSecret(`${given.username}\u0000${given.password}`, `${credentials.username}\u0000${credentials.password}`)
      if (!ok) return redirect(`/login?failed=1&next=${encodeURIComponent(next)}`)
      const secure = (request.headers["x-forwarded-proto"] ?? "").toLowerCase() === "https"
      return redirect(next, { "set-cookie": WebLogin.loginCookie(auth.token, secure) })
    }).pipe(
      Effect.catchTag("RequestError", (error) =>
        Effect.succeed(HttpServerResponse.text(`malformed login form: ${error.message}`, { status: 400 })))
    )

  return (app: HttpApp.Default): HttpApp.Default =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const url = new URL(request.url, "http://localhost")
      const target = route(request.method, url.pathname)
      switch (target.kind) {
        case "api":
          return yield* app
        case "login":
          return yield* login(request, url)
        case "logout":
          return redirect("/login", { "set-cookie": WebLogin.logoutCookie })
        case "asset": {
          // The built code and styles are the same for every install and hold no data: the login page needs them.
          const file = built(path.join("assets", target.name))
          return file ? send(request, file, { "x-content-type-options": "nosniff", "cache-control": "no-cache" }) : yield* app
        }
        case "page": {
          if (!auth.authorized(request)) return redirect(`/login?next=${encodeURIComponent(url.pathname)}`)
          const file = built("index.html")
          if (!file) return html("<!doctype html><title>agent</title><p>The web page was not built: run <code>pnpm build</code>.</p>", 503)
          return send(request, file, PAGE_HEADERS)
        }
      }
    })
}
