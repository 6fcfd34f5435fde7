import { describe, expect, it } from "vitest"
import { spawn } from "node:child_process"
import { pathToFileURL } from "node:url"
import * as path from "node:path"

/**
 * `agent acp` writes its protocol lines through `batchedOutput` (src/BatchedOutput.ts) from libuv's
 * thread pool. These run it in a child process whose stdout is a real pipe to the test, as an
 * editor's is, after touching `process.stdout` as the CLI does (Node then makes the pipe non-blocking).
 */
const moduleUrl = pathToFileURL(path.join(import.meta.dirname, "..", "dist", "BatchedOutput.js")).href

/** Runs `body` in a child with `output` (batchedOutput(1)) and `writer` (its stream's writer) in scope. */
const child = (body: string) =>
  spawn(process.execPath, ["--input-type=module", "-e", `
    import { batchedOutput } from ${JSON.stringify(moduleUrl)}
    process.stdout.on("error", () => {})
    const output = batchedOutput(process.stdout.fd)
    const writer = output.stream.getWriter()
    const line = (i) => new TextEncoder().encode(\`line \${i} \${"x".repeat(1000)}\\n\`)
    ${body}
  `], { stdio: ["ignore", "pipe", "pipe"] })

const exitOf = (process: ReturnType<typeof spawn>) =>
  new Promise<number | null>((resolve) => process.once("exit", (code) => resolve(code)))

describe("agent acp's stdout", () => {
  it("delivers every line in order through a pipe the reader leaves full, and all of it before an exit right after the flush", async () => {
    // 3,000 lines of 1 KB: many times a pipe's 64 KiB, so writes meet a full pipe while the test does not read.
    const writer = child(`
      for (let i = 0; i < 3000; i++) writer.write(line(i))
      await output.flushed()
      process.exit(0)
    `)
    const exit = exitOf(writer)
    writer.stdout!.pause()
    await new Promise((resolve) => setTimeout(resolve, 500))
    const chunks: Array<Buffer> = []
    writer.stdout!.on("data", (chunk: Buffer) => chunks.push(chunk))
    writer.stdout!.resume()
    let stderr = ""
    writer.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    expect(await exit).toBe(0)
    expect(stderr).toBe("")
    const lines = Buffer.concat(chunks).toString().split("\n").filter(Boolean)
    expect(lines.length).toBe(3000)
    expect(lines.map((text) => Number(text.split(" ")[1]))).toEqual(Array.from({ length: 3000 }, (_, i) => i))
    expect(lines.every((text) => text.endsWith("x".repeat(1000)))).toBe(true)
  })

  it("fails the stream, not the process, when the reader goes away", async () => {
    const writer = child(`
      try {
        for (let i = 0; ; i++) await writer.write(line(i))
      } catch (error) {
        console.error("output failed: " + error.code)
        process.exit(0)
      }
    `)
    const exit = exitOf(writer)
    let stderr = ""
    writer.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    await new Promise<void>((resolve) => writer.stdout!.once("data", () => resolve()))
    writer.stdout!.destroy()
    expect(await exit).toBe(0)
    expect(stderr.trim()).toBe("output failed: EPIPE")
  })
})
