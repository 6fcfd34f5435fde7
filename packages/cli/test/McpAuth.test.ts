import { OAuthMcpServer, TestInstance, TestNet } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

// The built CLI, as a user runs it (`pnpm test` builds before testing).
const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url))

const { freePort } = TestNet

/**
 * Starts `agent <args>` without blocking (the OAuth server runs in this process), killed when
 * the scope closes if it is still running. `url` completes with the first URL it prints.
 */
const start = (box: TestInstance.Sandbox, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const url = yield* Deferred.make<string>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [bin, ...args], {
          cwd: box.instance.directory,
          env: { ...box.instance.env, ...env } as NodeJS.ProcessEnv,
          stdio: ["ignore", "pipe", "pipe"]
        })
      ),
      (child) => Effect.sync(() => void (child.exitCode === null && child.kill("SIGKILL")))
    )
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString()
      const found = /^\s+(http:\/\/\S+)$/m.exec(stdout)
      if (found) Deferred.unsafeDone(url, Effect.succeed(found[1]!))
    })
    child.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
    const exit = Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
      child.once("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    })
    return { url: Deferred.await(url), exit }
  })

/** An OAuth-protected MCP server and a sandbox whose config names it `protected`. */
const setup = Effect.gen(function*() {
  const server = yield* OAuthMcpServer.start()
  const callbackPort = yield* freePort
  const box = yield* TestInstance.sandbox({
    files: { "project/agent.json": { mcp: { protected: { type: "remote", url: server.url, oauth: { callbackPort } } } } }
  })
  return { server, box, file: box.path("home/.local/share/agent/mcp-auth.json") }
})

describe("agent mcp auth / logout", () => {
  it.scopedLive("prints the URL, takes the browser's return on the loopback port, stores the tokens 0600 and connects", () =>
    Effect.gen(function*() {
      const { server, box, file } = yield* setup
      const agent = yield* start(box, ["mcp", "auth", "protected", "--no-browser"])
      const url = yield* agent.url
      expect(url.startsWith(new URL("/authorize?", server.url).href)).toBe(true)
      const page = yield* OAuthMcpServer.followInBrowser(url)
      expect(page.status).toBe(200)
      const result = yield* agent.exit
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("To authorize the MCP server protected, open this URL in a browser:")
      expect(result.stdout).toContain(`Authorized protected; the tokens are stored in ${file}.`)
      expect(result.stdout).toContain("Connected to protected: 1 tool.")
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      expect(server.provider.log).toEqual(["register", "authorize", "code"])

      const logout = yield* (yield* start(box, ["mcp", "logout", "protected"])).exit
      expect(logout.code).toBe(0)
      expect(logout.stdout).toBe(`Removed the stored credentials of protected from ${file}.\n`)
      expect(JSON.parse(fs.readFileSync(file, "utf8"))).toEqual({})
      const again = yield* (yield* start(box, ["mcp", "logout", "protected"])).exit
      expect(again.stdout).toBe("No credentials were stored for protected.\n")
    }), 60_000)

  it.scopedLive("opens the browser ($BROWSER) with the authorization URL", () =>
    Effect.gen(function*() {
      const { server, box, file } = yield* setup
      // A "browser" that approves at once: it follows the URL to the callback.
      box.write(
        "browser.mjs",
        "#!/usr/bin/env node\n" +
          "const approval = await fetch(process.argv[2], { redirect: 'manual' })\n" +
          "await fetch(approval.headers.get('location'))\n"
      )
      fs.chmodSync(box.path("browser.mjs"), 0o755)
      const result = yield* (yield* start(box, ["mcp", "auth", "protected"], { BROWSER: box.path("browser.mjs") })).exit
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout).toContain("Connected to protected: 1 tool.")
      expect(fs.existsSync(file)).toBe(true)
      expect(server.provider.log).toEqual(["register", "authorize", "code"])
    }), 60_000)

  it.scopedLive("an unknown server is a usage error", () =>
    Effect.gen(function*() {
      const { box } = yield* setup
      const result = yield* (yield* start(box, ["mcp", "auth", "ghost", "--no-browser"])).exit
      expect(result.code).toBe(2)
      expect(result.stderr).toBe("agent: there is no MCP server named ghost in the config (configured: protected)\n")
    }), 30_000)
})
