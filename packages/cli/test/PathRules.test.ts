import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project } from "./AgentProcess.js"

const { toolCall } = ScriptedModel

describe("path rules through symlinks, as a user runs the CLI", () => {
  it.scopedLive("a read rule denies a link to the file, and grep leaves the file out", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([
        [toolCall("read", { filePath: "link.txt" }), toolCall("grep", { pattern: "TOKEN" })],
        "Done."
      ])
      const box = yield* project(server.url, { permission: { read: { "*": "allow", "*secret*": "deny" } } }, {
        "project/secret.txt": "TOKEN=topsecret\n",
        "project/public.txt": "TOKEN=public\n"
      })
      fs.symlinkSync("secret.txt", box.path("project/link.txt"))
      const result = yield* agent(box, ["run", "--format", "json", "read the link, grep the tokens"])
      expect(result.code, result.stderr).toBe(0)
      const tools = events(result.stdout).filter((line) => line.type === "tool_use")
      const read = tools.find((line) => line.part.tool === "read")!
      const grep = tools.find((line) => line.part.tool === "grep")!
      expect(read.part.state.status).toBe("error")
      expect(read.part.state.error).toMatch(/Blocked by the user's permission rules/)
      expect(grep.part.state.status).toBe("completed")
      expect(grep.part.state.output).toContain("TOKEN=public")
      expect(grep.part.state.output).toContain("(1 file left out: the read permission denies it)")
      expect(JSON.stringify(server.requests[1]!.messages)).not.toContain("topsecret")
    }))
})
