import { describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** esbuild's record of the last bundle (`pnpm build` writes it). */
const meta = JSON.parse(fs.readFileSync(fileURLToPath(new URL("../dist/bundle/meta.json", import.meta.url)), "utf8")) as {
  outputs: Record<string, { imports: Array<{ path: string; kind: string }>; inputs: Record<string, unknown> }>
}

/** Every source file loaded before the named chunk runs (its static imports, transitively). */
const loadedWith = (chunk: string) => {
  const start = Object.keys(meta.outputs).find((file) => file.includes(`/${chunk}-`))!
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file) || !meta.outputs[file]) return
    seen.add(file)
    for (const entry of meta.outputs[file]!.imports) if (entry.kind === "import-statement") visit(entry.path)
  }
  visit(start)
  return [...seen].flatMap((file) => Object.keys(meta.outputs[file]!.inputs))
}

describe("the bundled CLI", () => {
  it("parses arguments and prints help without loading the runtime, providers or MCP", () => {
    const inputs = loadedWith("Main")
    expect(inputs.some((file) => file.includes("node_modules/@effect/cli/"))).toBe(true)
    expect(inputs.filter((file) => /packages\/(core|domain)\/|@ai-sdk|node_modules\/ai\/|@modelcontextprotocol|better-sqlite3/.test(file))).toEqual([])
  })

  it("inspecting sessions does not load the model or MCP libraries", () => {
    const inputs = loadedWith("Session")
    expect(inputs.some((file) => file.includes("packages/core/dist/store/SessionStore.js"))).toBe(true)
    expect(inputs.filter((file) => /@ai-sdk|node_modules\/ai\/|@modelcontextprotocol/.test(file))).toEqual([])
  })

  it("agent run and agent serve load OpenTelemetry only through the export's own chunk, imported when an endpoint is set", () => {
    const otel = /@opentelemetry|@effect\/opentelemetry|protobufjs/
    for (const command of ["Run", "Serve"]) {
      const inputs = loadedWith(command)
      expect(inputs.some((file) => file.includes("packages/core/dist/runtime/Tracing.js")), command).toBe(true)
      expect(inputs.filter((file) => otel.test(file) || file.includes("OtelExport")), command).toEqual([])
    }
    const exportChunk = loadedWith("OtelExport")
    expect(exportChunk.some((file) => file.includes("node_modules/@effect/opentelemetry/"))).toBe(true)
    expect(exportChunk.some((file) => file.includes("node_modules/@opentelemetry/sdk-trace-base/"))).toBe(true)
  })

  it("keeps every chunk in Latin-1, so V8 holds its source at one byte per character", () => {
    const dir = fileURLToPath(new URL("../dist/bundle/", import.meta.url))
    const chunks = fs.readdirSync(dir).filter((file) => file.endsWith(".js"))
    expect(chunks.length).toBeGreaterThan(10)
    expect(chunks.filter((file) => /[^\x00-\xff]/.test(fs.readFileSync(path.join(dir, file), "utf8")))).toEqual([])
  })
})
