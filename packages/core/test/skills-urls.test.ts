import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { ConfigService } from "../src/config/ConfigService.js"
import { SkillRegistry } from "../src/context/SkillRegistry.js"
import { badFilePath } from "../src/context/SkillDownload.js"
import { Instance } from "../src/runtime/Instance.js"

const skillFile = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\n\nBody of ${name}.\n`

/** A skills server on loopback: `files` by URL path; every request is recorded. */
const skillServer = (files: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly requests: Array<string>; readonly files: Record<string, string>; readonly server: http.Server }>((resume) => {
      const requests: Array<string> = []
      const server = http.createServer((request, response) => {
        requests.push(request.url ?? "")
        const body = files[request.url ?? ""]
        if (body === undefined) response.writeHead(404).end("not found")
        else response.writeHead(200, { "content-type": "text/plain" }).end(body)
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/skills`, requests, files, server })))
    }),
    ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  )

/** A registry of a project whose config lists `urls`, over `box` (shared between runs: the same data dir). */
const registry = (box: TestInstance.Sandbox) =>
  Effect.gen(function*() {
    const logs: Array<string> = []
    const capture = Logger.make(({ message }) => void logs.push(Array.isArray(message) ? message.map(String).join(" ") : String(message)))
    const context = yield* Layer.build(
      SkillRegistry.layer.pipe(Layer.provideMerge(ConfigService.layer), Layer.provideMerge(Layer.succeed(Instance, box.instance)))
    ).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
    return { skills: yield* Context.get(context, SkillRegistry).list(), logs }
  })

describe("skills.urls", () => {
  it.scopedLive("skills published at a URL are found; without the server the last copy is used; bad entries are refused", () =>
    Effect.gen(function*() {
      const served = yield* skillServer({
        "/skills/index.json": JSON.stringify({
          skills: [
            { name: "deploy", files: ["SKILL.md", "scripts/run.sh"] },
            { name: "escape", files: ["SKILL.md", "../../outside.txt"] },
            { name: "../up", files: ["SKILL.md"] }
          ]
        }),
        "/skills/deploy/SKILL.md": skillFile("deploy", "Deploys the app"),
        "/skills/deploy/scripts/run.sh": "echo deploying\n",
        "/skills/escape/SKILL.md": skillFile("escape", "Should not load")
      })
      const box = yield* TestInstance.sandbox({ files: {} })
      fs.writeFileSync(path.join(box.instance.worktree, "agent.json"), JSON.stringify({ skills: { urls: [served.url] } }))

      const first = yield* registry(box)
      const deploy = first.skills.find((skill) => skill.name === "deploy")
      expect(first.skills.map((skill) => skill.name)).toEqual(["deploy"])
      expect(deploy?.description).toBe("Deploys the app")
      expect(fs.readFileSync(path.join(deploy!.directory, "scripts", "run.sh"), "utf8")).toBe("echo deploying\n")
      expect(deploy!.directory.startsWith(box.instance.paths.data)).toBe(true)
      expect(first.logs.find((line) => line.includes("skill escape skipped"))).toMatch(/"..\/..\/outside.txt" is a path leaving the skill's folder/)
      expect(first.logs.find((line) => line.includes('"../up"'))).toMatch(/not a plain folder name/)
      expect(served.requests).not.toContain("/outside.txt")

      // The server gone: the copy from the first run is used, with a warning naming the URL.
      served.server.close()
      served.server.closeAllConnections()
      const offline = yield* registry(box)
      expect(offline.skills.map((skill) => skill.name)).toEqual(["deploy"])
      expect(offline.logs.find((line) => line.includes(`${served.url}/index.json`))).toMatch(/cannot fetch .* using the copy from the last time/)
    }))

  it.scopedLive("an index that is not a skills index is a warning naming the URL, and the run goes on", () =>
    Effect.gen(function*() {
      const served = yield* skillServer({ "/skills/index.json": "{\"skills\": \"nope\"}" })
      const box = yield* TestInstance.sandbox({ files: {} })
      fs.writeFileSync(path.join(box.instance.worktree, "agent.json"), JSON.stringify({ skills: { urls: [served.url] } }))
      const { logs, skills } = yield* registry(box)
      expect(skills).toEqual([])
      expect(logs.find((line) => line.includes(`${served.url}/index.json is not a skills index`))).toBeDefined()
    }))

  it("paths in an index: only plain relative paths inside the skill", () => {
    expect(badFilePath("SKILL.md")).toBeUndefined()
    expect(badFilePath("scripts/run.sh")).toBeUndefined()
    expect(badFilePath("/etc/passwd")).toBe("an absolute path")
    expect(badFilePath("a/../../b")).toBe("a path leaving the skill's folder")
    expect(badFilePath("https://evil.example/x")).toBe("a URL, not a path in the skill")
    expect(badFilePath("C:\\x")).toBe("a URL, not a path in the skill")
    expect(badFilePath("")).toBe("an empty path")
  })
})
