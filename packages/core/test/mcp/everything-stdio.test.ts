import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Tool from "../../src/tool/Tool.js"
import { resourceTools } from "../../src/mcp/McpTools.js"
import { everythingBin, makeContext, runTool, startMcp, toolById } from "./helpers.js"

const everything = (extra: object = {}) =>
  startMcp({ mcp: { everything: { type: "local", command: [everythingBin, "stdio"] } }, ...extra })

/** Starts the everything server over stdio and waits until it is connected. */
const connected = (extra: object = {}) =>
  Effect.gen(function*() {
    const harness = yield* everything(extra)
    yield* harness.mcp.ready("20 seconds")
    expect((yield* harness.mcp.status()).everything).toEqual({ status: "connected" })
    return harness
  })

describe("everything server over stdio", () => {
  it.scopedLive("lists its tools as <server>_<tool> with the server's description and JSON schema", () =>
    Effect.gen(function*() {
      const { mcp } = yield* connected()
      const ids = (yield* mcp.tools()).map((tool) => tool.id)
      expect(ids).toEqual(expect.arrayContaining(["everything_echo", "everything_get-tiny-image", "everything_trigger-long-running-operation"]))
      // Task-only tools cannot be called with tools/call, so they are not offered.
      expect(ids).not.toContain("everything_simulate-research-query")
      const echo = yield* toolById(mcp, "everything_echo")
      expect(echo.description).toBe("Echoes back the input string")
      const schema = Tool.jsonSchemaOf(echo)
      expect(schema).toMatchObject({
        type: "object",
        properties: { message: { type: "string", description: "Message to echo" } },
        required: ["message"],
        additionalProperties: false
      })
      expect(schema).not.toHaveProperty("$schema")
    }), 60_000)

  it.scopedLive("calls echo: text result, permission asked under the tool key with pattern *", () =>
    Effect.gen(function*() {
      const { mcp } = yield* connected()
      const echo = yield* toolById(mcp, "everything_echo")
      const { context, asked } = makeContext()
      const result = yield* runTool(echo, { message: "hello there" }, context)
      expect(result.output).toBe("Echo: hello there")
      expect(result.truncated).toBeUndefined()
      expect(asked).toEqual([{ permission: "everything_echo", patterns: ["*"], always: ["*"] }])

      const denied = makeContext({ deny: ["everything_echo"] })
      const error = yield* Effect.flip(runTool(echo, { message: "no" }, denied.context))
      expect(error._tag).toBe("DeniedError")
      // Arguments that are not an object never reach the server.
      expect((yield* Effect.flip(runTool(echo, "just a string", context)))._tag).toBe("ToolInputError")
    }), 60_000)

  it.scopedLive("maps image content to attachments and blob resources to files, text resources to text", () =>
    Effect.gen(function*() {
      const { mcp } = yield* connected()
      const { context } = makeContext()
      const image = yield* runTool(yield* toolById(mcp, "everything_get-tiny-image"), {}, context)
      expect(image.output).toBe("Here's the image you requested:\n\nThe image above is the MCP logo.")
      expect(image.attachments).toHaveLength(1)
      expect(image.attachments![0]!.mime).toBe("image/png")
      expect(image.attachments![0]!.url).toMatch(/^data:image\/png;base64,iVBORw0KGgo/)

      const reference = yield* toolById(mcp, "everything_get-resource-reference")
      const text = yield* runTool(reference, { resourceType: "Text", resourceId: 3 }, context)
      expect(text.output).toMatch(
        /^Returning resource reference for Resource 3:\n\nResource 3: This is a plaintext resource created at .+\n\nYou can access this resource using the URI: demo:\/\/resource\/dynamic\/text\/3$/
      )
      expect(text.attachments).toBeUndefined()

      const blob = yield* runTool(reference, { resourceType: "Blob", resourceId: 4 }, context)
      expect(blob.attachments).toHaveLength(1)
      expect(blob.attachments![0]).toMatchObject({ mime: "text/plain", filename: "4" })
      const payload = Buffer.from(blob.attachments![0]!.url.replace(/^data:text\/plain;base64,/, ""), "base64").toString()
      expect(payload).toMatch(/^Resource 4: This is a base64 blob created at/)
      expect(blob.output).not.toContain("This is a base64 blob")
    }), 60_000)

  it.scopedLive("an error result fails the call with the server's text; structured tools still answer", () =>
    Effect.gen(function*() {
      const { mcp } = yield* connected()
      const { context } = makeContext()
      const error = yield* Effect.flip(
        runTool(yield* toolById(mcp, "everything_get-resource-reference"), { resourceType: "Text", resourceId: 0 }, context)
      )
      expect(error).toBeInstanceOf(Tool.ToolExecutionError)
      expect(error.message).toContain("Invalid resourceId: 0")

      const weather = yield* runTool(yield* toolById(mcp, "everything_get-structured-content"), { location: "Chicago" }, context)
      expect(JSON.parse(weather.output)).toEqual({ temperature: 36, conditions: "Light rain / drizzle", humidity: 82 })
    }), 60_000)

  it.scopedLive("offers prompts keyed server:prompt and renders them with arguments", () =>
    Effect.gen(function*() {
      const { mcp } = yield* connected()
      const prompts = yield* mcp.prompts()
      const keys = prompts.map((prompt) => prompt.key)
      expect(keys).toEqual(expect.arrayContaining(["everything:simple-prompt", "everything:args-prompt"]))
      const args = prompts.find((prompt) => prompt.key === "everything:args-prompt")!
      expect(args).toMatchObject({ server: "everything", name: "args-prompt" })
      expect(args.arguments).toEqual(expect.arrayContaining([expect.objectContaining({ name: "city", required: true })]))

      const rendered = yield* mcp.getPrompt("everything:args-prompt", { city: "Paris", state: "Texas" })
      expect(rendered.messages).toEqual([{ role: "user", text: "What's weather in Paris, Texas?" }])
      const simple = yield* mcp.getPrompt("everything:simple-prompt")
      expect(simple.messages).toEqual([{ role: "user", text: "This is a simple prompt without arguments." }])

      const missing = yield* Effect.flip(mcp.getPrompt("everything:no-such-prompt"))
      expect(missing.message).toBe("No connected MCP server offers the prompt everything:no-such-prompt.")
    }), 60_000)

  it.scopedLive("lists and reads resources, directly and through the resource tools", () =>
    Effect.gen(function*() {
      const { mcp } = yield* connected()
      const resources = yield* mcp.resources()
      expect(resources.length).toBeGreaterThan(0)
      const document = resources.find((resource) => resource.uri.startsWith("demo://resource/static/document/"))
      expect(document).toMatchObject({ server: "everything" })
      expect(yield* mcp.resources("everything")).toEqual(resources)

      const contents = yield* mcp.readResource("everything", document!.uri)
      expect(contents).toHaveLength(1)
      expect(contents[0]!.uri).toBe(document!.uri)
      expect(contents[0]!.text!.length).toBeGreaterThan(0)

      const [list, templates, read] = resourceTools(mcp)
      expect([list!.id, templates!.id, read!.id]).toEqual(["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"])
      const { context, asked } = makeContext()
      const listed = yield* runTool(list!, {}, context)
      expect(listed.output.split("\n")).toContain(
        `everything ${document!.uri} (${[document!.name, document!.mimeType].filter(Boolean).join(", ")})` +
          (document!.description ? ` - ${document!.description}` : "")
      )
      const readBack = yield* runTool(read!, { server: "everything", uri: document!.uri }, context)
      expect(readBack.output).toBe(contents[0]!.text)

      // Templated resources are not listed one by one; the templates say how to name them.
      expect(resources.some((resource) => resource.uri.startsWith("demo://resource/dynamic/text/"))).toBe(false)
      const templateList = yield* mcp.resourceTemplates()
      expect(templateList).toContainEqual(expect.objectContaining({
        server: "everything",
        uriTemplate: "demo://resource/dynamic/text/{resourceId}",
        mimeType: "text/plain"
      }))
      expect(yield* mcp.resourceTemplates("everything")).toEqual(templateList)
      const templateOutput = (yield* runTool(templates!, { server: "everything" }, context)).output.split("\n")
      expect(templateOutput.some((line) => line.startsWith("everything demo://resource/dynamic/text/{resourceId} ("))).toBe(true)
      const fromTemplate = yield* runTool(read!, { server: "everything", uri: "demo://resource/dynamic/text/7" }, context)
      expect(fromTemplate.output).toMatch(/^Resource 7: This is a plaintext resource created at /)
      expect(asked.map((ask) => ask.permission)).toEqual([
        "list_mcp_resources",
        "read_mcp_resource",
        "list_mcp_resource_templates",
        "read_mcp_resource"
      ])

      const unknown = yield* Effect.flip(runTool(read!, { server: "nowhere", uri: "demo://x" }, context))
      expect(unknown.message).toBe("There is no MCP server named nowhere. Configured servers: everything.")
      const badUri = yield* Effect.flip(mcp.readResource("everything", "demo://resource/static/document/missing.md"))
      expect(badUri.message).toMatch(/^Reading demo:\/\/resource\/static\/document\/missing\.md from everything failed: /)
    }), 60_000)

  it.scopedLive("progress reports keep a long call alive past a short call timeout", () =>
    Effect.gen(function*() {
      // mcp_timeout sets the call timeout only; connecting keeps the 30 s default.
      const { mcp } = yield* connected({ experimental: { mcp_timeout: 1_200 } })
      const long = yield* toolById(mcp, "everything_trigger-long-running-operation")
      const { context, updates } = makeContext()
      const started = Date.now()
      const result = yield* runTool(long, { duration: 3, steps: 6 }, context)
      const elapsed = Date.now() - started
      expect(result.output).toBe("Long running operation completed. Duration: 3 seconds, Steps: 6.")
      expect(elapsed).toBeGreaterThan(2_900)
      expect(updates.map((update) => update.metadata)).toEqual(
        [1, 2, 3, 4, 5, 6].map((progress) => ({ progress, total: 6 }))
      )
    }), 60_000)

  it.scopedLive("a call without progress fails after the call timeout", () =>
    Effect.gen(function*() {
      const { mcp } = yield* connected({ experimental: { mcp_timeout: 1_200 } })
      const long = yield* toolById(mcp, "everything_trigger-long-running-operation")
      const { context } = makeContext()
      const started = Date.now()
      const error = yield* Effect.flip(runTool(long, { duration: 4, steps: 1 }, context))
      const elapsed = Date.now() - started
      expect(error.message).toBe(
        "The MCP tool trigger-long-running-operation (server everything) did not answer within 1200 ms (the timeout restarts with every progress report)."
      )
      expect(elapsed).toBeGreaterThanOrEqual(1_150)
      // Before the 4 s operation would have ended.
      expect(elapsed).toBeLessThan(3_900)
      // The server is still usable afterwards.
      const echo = yield* runTool(yield* toolById(mcp, "everything_echo"), { message: "still here" }, context)
      expect(echo.output).toBe("Echo: still here")
    }), 60_000)
})
