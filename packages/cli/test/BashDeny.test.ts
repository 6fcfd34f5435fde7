import { MockOpenAIServer, ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { agent, events, project } from "./AgentProcess.js"

const { toolCall } = ScriptedModel

const bash = (command: string) => toolCall("bash", { command, description: "Runs a command" })

describe("bash deny rules through the CLI", () => {
  it.scopedLive("under --auto-approve, rm spelled by path, wrapper, computed name or pipe is denied and the file stays", () =>
    Effect.gen(function*() {
      const spellings = ["/bin/rm victim.txt", "R=rm; $R victim.txt", "echo 'rm victim.txt' | bash", "env -S 'rm victim.txt'", "timeout --signal KILL 5 rm victim.txt"]
      const server = yield* MockOpenAIServer.start([spellings.map(bash), "The file is protected."])
      const box = yield* project(server.url, { permission: { bash: { "*": "allow", "rm *": "deny" } } }, { "project/victim.txt": "keep" })
      const result = yield* agent(box, ["run", "--auto-approve", "--format", "json", "delete victim.txt"])
      expect(result.code, result.stderr).toBe(0)
      const tools = events(result.stdout).filter((line) => line.type === "tool_use")
      expect(tools).toHaveLength(spellings.length)
      for (const tool of tools) {
        expect(tool.part.state.status).toBe("error")
        expect(tool.part.state.error).toMatch(/Blocked/)
      }
      expect(fs.readFileSync(box.path("project/victim.txt"), "utf8")).toBe("keep")
      // The model is told why a computed name is blocked and how the user could allow it.
      expect(JSON.stringify(server.requests[1]!.messages)).toContain("is computed when it runs")
    }), 60_000)

  it.scopedLive("--auto-approve does not answer an ask the rules cannot check, nor one the managed policy makes", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([[bash("G=git; $G status")], "never"])
      const box = yield* project(server.url, { permission: { bash: { "*": "allow", "git push *": "ask" } } })
      const result = yield* agent(box, ["run", "--auto-approve", "--format", "json", "check"])
      expect(result.code).toBe(3)
      expect(result.stderr).toMatch(/rejected: only a person may approve it \(the rules cannot check it: the name of the command it runs \(\$G\) is computed when it runs\), and there is no terminal to ask; --auto-approve does not answer it/)

      const policyServer = yield* MockOpenAIServer.start([[bash("deploy prod")], "never"])
      const managed = yield* project(policyServer.url, { permission: { bash: "allow" } }, {
        "managed/agent.json": JSON.stringify({ permission: { bash: { "deploy *": "ask" } } })
      })
      const policy = yield* agent(managed, ["run", "--auto-approve", "--format", "json", "deploy"])
      expect(policy.code).toBe(3)
      expect(policy.stderr).toMatch(/only a person may approve it \(the enterprise policy asks a person to approve it\)/)
    }), 60_000)

  it.scopedLive("permission explain parses the command as the bash tool does", () =>
    Effect.gen(function*() {
      const server = yield* MockOpenAIServer.start([])
      const box = yield* project(server.url, { permission: { bash: { "*": "allow", "rm *": "deny" } } })
      const byPath = yield* agent(box, ["permission", "explain", "bash", "/bin/rm victim", "--format", "json"])
      expect(byPath.code, byPath.stderr).toBe(0)
      expect(JSON.parse(byPath.stdout)).toMatchObject({
        action: "deny",
        pattern: "rm victim",
        checks: [{ pattern: "/bin/rm victim", action: "allow" }, { pattern: "rm victim", action: "deny" }]
      })
      const computed = yield* agent(box, ["permission", "explain", "bash", "R=rm; $R victim"])
      expect(computed.stdout.split("\n")[0]).toBe("deny  (agent build)")
      expect(computed.stdout).toContain("the rules cannot read this command: the name of the command it runs ($R) is computed when it runs")
      expect(computed.stdout).toContain('to allow it on purpose, add "$R victim": "allow" to permission.bash, after its deny rules')
      const plain = yield* agent(box, ["permission", "explain", "bash", "ls -la", "--format", "json"])
      expect(JSON.parse(plain.stdout)).toMatchObject({ action: "allow", pattern: "ls -la" })
    }), 60_000)
})
