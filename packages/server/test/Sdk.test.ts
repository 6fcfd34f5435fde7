import { MemoryUsage, type PermissionRequest } from "@agent/domain"
import { ScriptedModel } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { eventually, serve } from "./support.js"

const { text, toolCall } = ScriptedModel

const askBash = [{ permission: "bash", pattern: "*", action: "ask" as const }]

describe("the server through @opencode-ai/sdk", () => {
  it.scopedLive("creates a session, prompts it and reads the messages back", () =>
    Effect.gen(function*() {
      const { client } = yield* serve({ model: ScriptedModel.make(["Hello from the model."]) })
      const created = yield* Effect.promise(() => client.session.create({ body: { title: "first" } }))
      expect(created.response.status).toBe(200)
      const id = created.data!.id
      expect(created.data!.title).toBe("first")

      const reply = yield* Effect.promise(() =>
        client.session.prompt({ path: { id }, body: { parts: [{ type: "text", text: "say hello" }] } })
      )
      expect(reply.response.status).toBe(200)
      expect(reply.data!.info.role).toBe("assistant")
      expect(reply.data!.parts.find((part) => part.type === "text")).toMatchObject({ text: "Hello from the model." })

      const messages = yield* Effect.promise(() => client.session.messages({ path: { id } }))
      expect(messages.data!.map((message) => message.info.role)).toEqual(["user", "assistant"])
      expect(messages.data![0]!.parts[0]).toMatchObject({ type: "text", text: "say hello" })

      const one = yield* Effect.promise(() => client.session.message({ path: { id, messageID: reply.data!.info.id } }))
      expect(one.data!.info.id).toBe(reply.data!.info.id)

      const list = yield* Effect.promise(() => client.session.list())
      expect(list.data!.map((session) => session.id)).toContain(id)
      const got = yield* Effect.promise(() => client.session.get({ path: { id } }))
      expect(got.data!.id).toBe(id)
      const updated = yield* Effect.promise(() => client.session.update({ path: { id }, body: { title: "renamed" } }))
      expect(updated.data!.title).toBe("renamed")
    }))

  it.scopedLive("streams the run's parts as events, server.connected first", () =>
    Effect.gen(function*() {
      const { client } = yield* serve({ model: ScriptedModel.make([[text("streamed "), text("answer")]]) })
      const controller = new AbortController()
      yield* Effect.addFinalizer(() => Effect.sync(() => controller.abort()))
      const events = yield* Effect.promise(() => client.event.subscribe({ signal: controller.signal }))
      const seen: Array<{ type: string; properties: any }> = []
      const reader = (async () => {
        for await (const event of events.stream) {
          seen.push(event as any)
          if (event.type === "session.idle" || (event.type === "session.status" && (event.properties as any).status.type === "idle")) break
        }
      })()
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const accepted = yield* Effect.promise(() =>
        client.session.promptAsync({ path: { id: session.id }, body: { parts: [{ type: "text", text: "go" }] } })
      )
      expect(accepted.response.status).toBe(204)
      yield* Effect.promise(() => reader)
      expect(seen[0]!.type).toBe("server.connected")
      const types = seen.map((event) => event.type)
      expect(types).toContain("session.status")
      expect(types).toContain("message.updated")
      const assistant = new Set(
        seen.filter((event) => event.type === "message.updated" && event.properties.info.role === "assistant")
          .map((event) => event.properties.info.id)
      )
      const texts = new Map<string, string>()
      for (const event of seen) {
        if (event.type === "message.part.updated" && event.properties.part.type === "text" && assistant.has(event.properties.part.messageID)) {
          texts.set(event.properties.part.id, event.properties.part.text)
        }
      }
      expect([...texts.values()].join("")).toBe("streamed answer")
      // every replayable event carries an increasing id
      const ids = seen.map((event: any) => event.id).filter((id) => id !== undefined)
      expect(ids.length).toBeGreaterThan(3)
      expect([...ids].sort((a, b) => a - b)).toEqual(ids)
    }))

  it.scopedLive("a permission ask is answered through both reply routes", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [toolCall("bash", { command: "echo first", description: "first" })],
        [toolCall("bash", { command: "echo second", description: "second" })],
        "finished"
      ])
      const { client, url } = yield* serve({ model })
      const session = (yield* Effect.promise(() =>
        fetch(`${url}/session`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ permission: askBash })
        }).then((response) => response.json())
      )) as { id: string }
      const done = client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "run two" }] } })

      const pending = () =>
        fetch(`${url}/permission`).then((response) => response.json() as Promise<Array<PermissionRequest>>)
      const first = yield* eventually(async () => (await pending()).find((request) => request.patterns.includes("echo first")))
      // OpenCode's v1 route
      const answered = yield* Effect.promise(() =>
        client.postSessionIdPermissionsPermissionId({
          path: { id: session.id, permissionID: first.id },
          body: { response: "once" }
        })
      )
      expect(answered.data).toBe(true)

      const second = yield* eventually(async () => (await pending()).find((request) => request.patterns.includes("echo second")))
      const rejected = yield* Effect.promise(() =>
        fetch(`${url}/permission/${second.id}/reply`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ reply: "reject", message: "use printf instead" })
        })
      )
      expect(rejected.status).toBe(200)

      const reply = yield* Effect.promise(() => done)
      expect(reply.data!.parts.find((part) => part.type === "text")).toMatchObject({ text: "finished" })
      const messages = (yield* Effect.promise(() => client.session.messages({ path: { id: session.id } }))).data!
      const tools = messages.flatMap((message) => message.parts).filter((part) => part.type === "tool") as Array<any>
      expect(tools[0]!.state).toMatchObject({ status: "completed" })
      expect(tools[0]!.state.output).toContain("first")
      expect(tools[1]!.state.status).toBe("error")
      expect(tools[1]!.state.error).toContain("use printf instead")

      // an answered request is gone
      const again = yield* Effect.promise(() =>
        client.postSessionIdPermissionsPermissionId({ path: { id: session.id, permissionID: first.id }, body: { response: "once" } })
      )
      expect(again.response.status).toBe(404)
    }))

  it.scopedLive("abort stops a running prompt and marks its tool interrupted", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([[toolCall("bash", { command: "sleep 30", description: "wait" })], "never"])
      const { client } = yield* serve({ model })
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const done = client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "wait" }] } })
      yield* eventually(async () => {
        const status = (await client.session.status()).data!
        return status[session.id]?.type === "busy" ? true : undefined
      })
      // let the tool start
      yield* eventually(async () => {
        const messages = (await client.session.messages({ path: { id: session.id } })).data!
        return messages.flatMap((message) => message.parts).some((part: any) => part.type === "tool" && part.state.status === "running")
          ? true
          : undefined
      })
      const aborted = yield* Effect.promise(() => client.session.abort({ path: { id: session.id } }))
      expect(aborted.data).toBe(true)
      const reply = yield* Effect.promise(() => done)
      expect(reply.response.status).toBe(200)
      const tool = reply.data!.parts.find((part) => part.type === "tool") as any
      expect(tool.state.status).toBe("error")
      const status = (yield* Effect.promise(() => client.session.status())).data!
      expect(status[session.id]).toBeUndefined()
    }))

  it.scopedLive("fork, children and delete", () =>
    Effect.gen(function*() {
      const { client } = yield* serve({ model: ScriptedModel.make(["one", "two"]) })
      const parent = (yield* Effect.promise(() => client.session.create({ body: { title: "parent" } }))).data!
      yield* Effect.promise(() => client.session.prompt({ path: { id: parent.id }, body: { parts: [{ type: "text", text: "a" }] } }))
      const child = (yield* Effect.promise(() => client.session.create({ body: { parentID: parent.id, title: "child" } }))).data!
      const children = (yield* Effect.promise(() => client.session.children({ path: { id: parent.id } }))).data!
      expect(children.map((session) => session.id)).toEqual([child.id])

      const fork = (yield* Effect.promise(() => client.session.fork({ path: { id: parent.id }, body: {} }))).data!
      expect(fork.id).not.toBe(parent.id)
      expect(fork.title).toContain("parent")
      const forked = (yield* Effect.promise(() => client.session.messages({ path: { id: fork.id } }))).data!
      expect(forked.map((message) => message.info.role)).toEqual(["user", "assistant"])

      const deleted = yield* Effect.promise(() => client.session.delete({ path: { id: parent.id } }))
      expect(deleted.data).toBe(true)
      const gone = yield* Effect.promise(() => client.session.get({ path: { id: parent.id } }))
      expect(gone.response.status).toBe(404)
      const childGone = yield* Effect.promise(() => client.session.get({ path: { id: child.id } }))
      expect(childGone.response.status).toBe(404)
      const forkKept = yield* Effect.promise(() => client.session.get({ path: { id: fork.id } }))
      expect(forkKept.response.status).toBe(200)
    }))

  it.scopedLive("agents, config, mcp, path, health, memory and the OpenAPI document", () =>
    Effect.gen(function*() {
      const { client, url, box } = yield* serve({ model: ScriptedModel.make(["x"]) })
      const agents = (yield* Effect.promise(() => client.app.agents())).data!
      expect(agents.map((agent) => agent.name)).toEqual(expect.arrayContaining(["build", "plan", "general", "explore"]))
      const config = yield* Effect.promise(() => client.config.get())
      expect(config.response.status).toBe(200)
      const mcp = yield* Effect.promise(() => client.mcp.status())
      expect(mcp.data).toEqual({})
      const paths = (yield* Effect.promise(() => client.path.get())).data!
      expect(paths.directory).toBe(box.instance.directory)
      const health = yield* Effect.promise(() => fetch(`${url}/global/health`).then((response) => response.json()))
      expect(health).toMatchObject({ healthy: true })
      const memory = Schema.decodeUnknownSync(MemoryUsage, { onExcessProperty: "error" })(
        yield* Effect.promise(() => fetch(`${url}/global/memory`).then((response) => response.json()))
      )
      expect(memory.rss).toBeGreaterThan(memory.heapUsed)
      const doc = (yield* Effect.promise(() => fetch(`${url}/doc`).then((response) => response.json()))) as any
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/session", "/session/{id}/message", "/event"]))
    }))

  it.scopedLive("commands are listed and run on a session with their arguments", () =>
    Effect.gen(function*() {
      const { client } = yield* serve({
        model: ScriptedModel.make(["Hello, Bob!"]),
        files: { "project/agent.json": { command: { greet: { template: "Say hello to $1", description: "Greets someone" } } } }
      })
      const commands = (yield* Effect.promise(() => client.command.list())).data!
      expect(commands.map((command) => command.name)).toEqual(expect.arrayContaining(["greet", "init"]))
      expect(commands.find((command) => command.name === "greet")).toMatchObject({ description: "Greets someone" })

      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const reply = yield* Effect.promise(() =>
        client.session.command({ path: { id: session.id }, body: { command: "greet", arguments: "Bob" } })
      )
      expect(reply.response.status).toBe(200)
      expect(reply.data!.parts.find((part) => part.type === "text")).toMatchObject({ text: "Hello, Bob!" })
      const messages = (yield* Effect.promise(() => client.session.messages({ path: { id: session.id } }))).data!
      expect(messages[0]!.parts.find((part) => part.type === "text")).toMatchObject({ text: "Say hello to Bob" })

      const unknown = yield* Effect.promise(() =>
        client.session.command({ path: { id: session.id }, body: { command: "nope", arguments: "" } })
      )
      expect(unknown.response.status).toBe(404)
      expect(JSON.stringify(unknown.error)).toContain("greet")
    }))

  it.scopedLive("sessions run side by side; aborting one leaves the other running to the end", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        (request) => ScriptedModel.lastUserText(request).includes("slow")
          ? [toolCall("bash", { command: "sleep 30", description: "slow" })]
          : [toolCall("bash", { command: "sleep 1", description: "short" })],
        (request) => ScriptedModel.lastUserText(request).includes("slow")
          ? [toolCall("bash", { command: "sleep 30", description: "slow" })]
          : [toolCall("bash", { command: "sleep 1", description: "short" })],
        "finished",
        "finished"
      ])
      const { client } = yield* serve({ model })
      const slow = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const steady = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const slowDone = client.session.prompt({ path: { id: slow.id }, body: { parts: [{ type: "text", text: "slow" }] } })
      const steadyDone = client.session.prompt({ path: { id: steady.id }, body: { parts: [{ type: "text", text: "steady" }] } })
      yield* eventually(async () => {
        const status = (await client.session.status()).data!
        return status[slow.id]?.type === "busy" && status[steady.id]?.type === "busy" ? true : undefined
      })
      // Abort once the slow session's command runs (busy alone may still be before the model's answer).
      yield* eventually(async () => {
        const messages = (await client.session.messages({ path: { id: slow.id } })).data ?? []
        const running = messages.flatMap((message) => message.parts).some((part: any) => part.type === "tool" && part.state.status === "running")
        return running ? true : undefined
      })
      yield* Effect.promise(() => client.session.abort({ path: { id: slow.id } }))
      const [slowReply, steadyReply] = yield* Effect.promise(() => Promise.all([slowDone, steadyDone]))
      expect((slowReply.data!.parts.find((part) => part.type === "tool") as any).state.status).toBe("error")
      expect(steadyReply.data!.parts.find((part) => part.type === "text")).toMatchObject({ text: "finished" })
      const steadyTools = (yield* Effect.promise(() => client.session.messages({ path: { id: steady.id } }))).data!
        .flatMap((message) => message.parts)
        .filter((part) => part.type === "tool") as Array<any>
      expect(steadyTools.map((part) => part.state.status)).toEqual(["completed"])
    }))
})

describe("MCP through the server", () => {
  it.scopedLive("status, disconnect and connect of a real stdio server; unknown names are 404", () =>
    Effect.gen(function*() {
      const fixture = new URL("../../core/test/mcp/fixtures/server.mjs", import.meta.url).pathname
      const { client } = yield* serve({
        model: ScriptedModel.make(["x"]),
        files: { "project/agent.json": { mcp: { fixture: { type: "local", command: ["node", fixture] } } } }
      })
      yield* eventually(async () => ((await client.mcp.status()).data as any)?.fixture?.status === "connected" ? true : undefined)
      const off = yield* Effect.promise(() => client.mcp.disconnect({ path: { name: "fixture" } }))
      expect(off.data).toBe(true)
      expect(((yield* Effect.promise(() => client.mcp.status())).data as any).fixture.status).toBe("disabled")
      const on = yield* Effect.promise(() => client.mcp.connect({ path: { name: "fixture" } }))
      expect(on.data).toBe(true)
      expect(((yield* Effect.promise(() => client.mcp.status())).data as any).fixture.status).toBe("connected")
      const unknown = yield* Effect.promise(() => client.mcp.connect({ path: { name: "nope" } }))
      expect(unknown.response.status).toBe(404)
      expect(JSON.stringify(unknown.error)).toContain("fixture")
    }))
})

describe("revert through the server", () => {
  it.scopedLive("diff lists a written file; revert restores it and reports; unrevert puts it back", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make([
        [toolCall("write", { filePath: "notes.txt", content: "changed by the agent\n" })],
        "written"
      ])
      const { client, box } = yield* serve({ model, files: { "project/notes.txt": "original\n" } })
      const file = `${box.instance.directory}/notes.txt`
      const session = (yield* Effect.promise(() => client.session.create({ body: {} }))).data!
      const reply = yield* Effect.promise(() =>
        client.session.prompt({ path: { id: session.id }, body: { parts: [{ type: "text", text: "change the notes" }] } })
      )
      expect(reply.response.status).toBe(200)
      const fs = yield* Effect.promise(() => import("node:fs"))
      expect(fs.readFileSync(file, "utf8")).toBe("changed by the agent\n")

      const diff = (yield* Effect.promise(() => client.session.diff({ path: { id: session.id } }))).data!
      expect(diff.map((entry) => entry.file)).toEqual(["notes.txt"])

      const messages = (yield* Effect.promise(() => client.session.messages({ path: { id: session.id } }))).data!
      const reverted = yield* Effect.promise(() =>
        client.session.revert({ path: { id: session.id }, body: { messageID: messages[0]!.info.id } })
      )
      expect(reverted.response.status, JSON.stringify(reverted.error)).toBe(200)
      expect(fs.readFileSync(file, "utf8")).toBe("original\n")
      expect((reverted.data as any).restored).toEqual([file])
      expect(reverted.data!.revert?.messageID).toBe(messages[0]!.info.id)

      const back = yield* Effect.promise(() => client.session.unrevert({ path: { id: session.id } }))
      expect(back.response.status).toBe(200)
      expect(fs.readFileSync(file, "utf8")).toBe("changed by the agent\n")

      const nowhere = yield* Effect.promise(() =>
        client.session.revert({ path: { id: session.id }, body: { messageID: `msg_${"Z".repeat(26)}` } })
      )
      expect(nowhere.response.status).toBe(404)
    }))
})
