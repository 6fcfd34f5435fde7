import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Tool from "../../src/tool/Tool.js"
import { inputJsonSchema, makeTool, promptKey, sanitize, toolKey, toToolResult } from "../../src/mcp/McpTools.js"
import { makeContext, runTool } from "./helpers.js"

describe("MCP tool naming and schemas", () => {
  it("sanitizes names as OpenCode does", () => {
    expect(sanitize("my server.v2/é")).toBe("my_server_v2__")
    expect(toolKey("git hub", "create-issue")).toBe("git_hub_create-issue")
    expect(promptKey("docs.site", "review code")).toBe("docs_site:review_code")
  })

  it("forces the input schema to an object without extra keys, dropping $schema", () => {
    expect(inputJsonSchema({
      name: "t",
      inputSchema: { type: "object", $schema: "http://json-schema.org/draft-07/schema#", required: ["a"], properties: { a: { type: "number" } } }
    } as never)).toEqual({ type: "object", required: ["a"], properties: { a: { type: "number" } }, additionalProperties: false })
    expect(inputJsonSchema({ name: "t", inputSchema: { type: "object" } })).toEqual({
      type: "object",
      properties: {},
      additionalProperties: false
    })
  })

  it("jsonSchemaOf prefers a tool's own JSON schema", () => {
    const tool = makeTool("srv", { name: "x", inputSchema: { type: "object", properties: { q: { type: "string" } } } }, () =>
      Effect.die("unused"))
    expect(Tool.jsonSchemaOf(tool)).toEqual({ type: "object", properties: { q: { type: "string" } }, additionalProperties: false })
    const plain = Tool.make({
      id: "plain",
      description: "",
      parameters: Schema.Struct({ n: Schema.Number }),
      execute: () => Effect.succeed({ title: "", output: "" })
    })
    expect(Tool.jsonSchemaOf(plain as Tool.AnyTool)).toMatchObject({ type: "object", properties: { n: { type: "number" } } })
  })
})

describe("MCP result mapping", () => {
  const map = (result: Parameters<typeof toToolResult>[3]) => toToolResult("srv_t", "srv", "t", result)

  it.effect("joins text parts with blank lines and turns structured content without text into JSON", () =>
    Effect.gen(function*() {
      expect((yield* map({ content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] })).output).toBe("a\n\nb")
      const structured = yield* map({ content: [], structuredContent: { rows: [1, 2] } })
      expect(JSON.parse(structured.output)).toEqual({ rows: [1, 2] })
      // With text present, the text is what the model reads.
      expect((yield* map({ content: [{ type: "text", text: "summary" }], structuredContent: { rows: [] } })).output).toBe("summary")
      expect(JSON.parse((yield* map({ toolResult: { legacy: true } })).output)).toEqual({ legacy: true })
    }))

  it.effect("attaches images and blob resources, keeps text resources and notes resource links", () =>
    Effect.gen(function*() {
      const result = yield* map({
        content: [
          { type: "image", data: "AAAA", mimeType: "image/gif" },
          { type: "resource", resource: { uri: "file:///tmp/report.pdf", mimeType: "application/pdf", blob: "JVBERi0=" } },
          { type: "resource", resource: { uri: "file:///tmp/a.txt", text: "inline text" } },
          { type: "resource_link", uri: "file:///tmp/b.txt", name: "b.txt", mimeType: "text/plain" }
        ]
      })
      expect(result.attachments).toEqual([
        { mime: "image/gif", url: "data:image/gif;base64,AAAA" },
        { mime: "application/pdf", url: "data:application/pdf;base64,JVBERi0=", filename: "report.pdf" }
      ])
      expect(result.output).toBe("inline text\n\nResource: file:///tmp/b.txt (b.txt, text/plain)")
      expect(result.truncated).toBeUndefined()
    }))

  it.effect("isError fails with the server's text, or says there was none", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(map({ content: [{ type: "text", text: "no such row" }], isError: true }))
      expect(error).toEqual(new Tool.ToolExecutionError({ tool: "srv_t", detail: "no such row" }))
      const bare = yield* Effect.flip(map({ content: [], isError: true }))
      expect(bare.message).toBe("The MCP tool t (server srv) reported an error without a message.")
    }))

  it.effect("a tool asks permission before calling, and a denial stops the call", () =>
    Effect.gen(function*() {
      const calls: Array<unknown> = []
      const tool = makeTool("srv", { name: "t", inputSchema: { type: "object" } }, (args) =>
        Effect.sync(() => {
          calls.push(args)
          return { content: [{ type: "text" as const, text: "done" }] }
        }))
      const denied = makeContext({ deny: ["srv_t"] })
      expect((yield* Effect.flip(runTool(tool, { a: 1 }, denied.context)))._tag).toBe("DeniedError")
      expect(calls).toEqual([])
      const allowed = makeContext()
      expect((yield* runTool(tool, { a: 1 }, allowed.context)).output).toBe("done")
      expect(calls).toEqual([{ a: 1 }])
      expect(allowed.asked).toEqual([{ permission: "srv_t", patterns: ["*"], always: ["*"] }])
    }))
})
