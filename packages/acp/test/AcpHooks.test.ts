// Hooks under `agent acp`: the editor's runs go through the same session loop, so a user's hooks
// block and answer there as under `agent run` (docs/hooks.md). Real hook scripts, the built CLI.
import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import type * as Acp from "@agentclientprotocol/sdk"
import { Effect } from "effect"
import * as fs from "node:fs"
import { editor, initialize, project } from "./AcpClient.js"

const { toolCall } = ScriptedModel

const bash = (command: string) => toolCall("bash", { command, description: "Runs a command" })

describe("hooks under agent acp", () => {
  it.scopedLive("a PreToolUse exit 2 fails the call with its stderr; a PermissionRequest allow answers without asking the editor", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("echo blocked > blocked.txt")], [bash("echo approved > ok.txt")], "Done."])
      const box = yield* project(server.url, { permission: { bash: "ask" } })
      const guard = box.path("home/guard.sh")
      fs.writeFileSync(guard, "#!/bin/sh\nif grep -q blocked; then echo 'not that file' >&2; exit 2; fi\n", { mode: 0o755 })
      const approve = box.path("home/approve.sh")
      const log = box.path("home/approve.log")
      fs.writeFileSync(approve, `#!/bin/sh\ncat >> '${log}'\necho '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'\n`, { mode: 0o755 })
      box.write("home/.claude/settings.json", {
        hooks: {
          PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: guard }] }],
          PermissionRequest: [{ matcher: "Bash", hooks: [{ type: "command", command: approve }] }]
        }
      })
      const client = yield* editor(box)
      yield* initialize(client)
      const { sessionId } = yield* Effect.promise(() => client.agent.request("session/new", { cwd: box.instance.directory, mcpServers: [] }))
      const response = yield* Effect.promise(() => client.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write two files" }] }))
      expect(response.stopReason, client.stderr()).toBe("end_turn")
      expect(fs.existsSync(box.path("project/blocked.txt"))).toBe(false)
      expect(fs.readFileSync(box.path("project/ok.txt"), "utf8").trim()).toBe("approved")
      expect(JSON.stringify(server.requests[1]!.messages)).toContain("not that file")
      expect(client.asked).toHaveLength(0)
      expect(fs.readFileSync(log, "utf8")).toContain('"hook_event_name":"PermissionRequest"')
      const updates = client.of(sessionId).filter((update): update is Extract<Acp.SessionUpdate, { toolCallId: string }> => "toolCallId" in update)
      expect(updates.filter((update) => update.status === "failed")).toHaveLength(1)
      expect(updates.filter((update) => update.status === "completed")).toHaveLength(1)
    }), 60_000)
})
