import { TestInstance, TestToolContext } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import * as Tool from "../../src/tool/Tool.js"
import * as Read from "../../src/tools/Read.js"
import { readDeps } from "./deps.js"

/** read decides text, image, PDF or binary from a file's bytes, not its name. */

const setup = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox()
  const tool = yield* Effect.provide(Read.make, readDeps(box.instance))
  const put = (name: string, bytes: Uint8Array | string) => {
    fs.writeFileSync(box.path(`project/${name}`), bytes)
    return box.path(`project/${name}`)
  }
  const read = (name: string) =>
    Tool.decodeInput(tool, { filePath: name }).pipe(
      Effect.flatMap((params) => tool.execute(params, TestToolContext.make({ sessionID: `ses_kind_${Math.random()}` }).context))
    )
  return { box, put, read }
})

const ascii = (text: string) => Buffer.from(text, "latin1")
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from([0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])])
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00])
const GIF = Buffer.concat([ascii("GIF89a"), Buffer.from([1, 0, 1, 0, 0x80, 0, 0])])
const WEBP = Buffer.concat([ascii("RIFF"), Buffer.from([0x24, 0, 0, 0]), ascii("WEBPVP8 "), Buffer.alloc(8)])
const PDF = ascii("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n")

describe("read: by content", () => {
  it.scopedLive("JPEG, PNG, GIF and WebP bytes are attached as images and PDF bytes as a PDF, whatever the file is called", () =>
    Effect.gen(function*() {
      const { put, read } = yield* setup
      const cases = [
        ["photo.bin", JPEG, "image/jpeg", "Image"],
        ["logo.dat", PNG, "image/png", "Image"],
        ["anim", GIF, "image/gif", "Image"],
        ["picture.txt", WEBP, "image/webp", "Image"],
        ["report.data", PDF, "application/pdf", "PDF"]
      ] as const
      for (const [name, bytes, mime, label] of cases) {
        put(name, bytes)
        const result = yield* read(name)
        expect(result.output).toContain(`${label} read successfully`)
        expect(result.attachments).toEqual([{ mime, url: `data:${mime};base64,${bytes.toString("base64")}`, filename: name }])
      }
    }))

  it.scopedLive("an image past 64 KB (looked at by its head, then read whole) is attached whole", () =>
    Effect.gen(function*() {
      const { put, read } = yield* setup
      const big = Buffer.concat([PNG, Buffer.alloc(100 * 1024, 7)])
      put("big.raw", big)
      const result = yield* read("big.raw")
      expect(result.attachments?.[0]).toEqual({ mime: "image/png", url: `data:image/png;base64,${big.toString("base64")}`, filename: "big.raw" })
    }))

  it.scopedLive("text named like an image or an archive is read as text", () =>
    Effect.gen(function*() {
      const { put, read } = yield* setup
      put("notes.png", "not really a picture\nsecond line\n")
      put("archive.zip", "looks like text")
      const notes = yield* read("notes.png")
      expect(notes.attachments).toBeUndefined()
      expect(notes.output).toContain("1: not really a picture\n2: second line")
      expect((yield* read("archive.zip")).output).toContain("1: looks like text")
    }))

  it.scopedLive("an image type the model cannot take is described, not dumped", () =>
    Effect.gen(function*() {
      const { put, read } = yield* setup
      const tiff = Buffer.concat([Buffer.from([0x49, 0x49, 0x2a, 0x00, 0x08, 0, 0, 0]), Buffer.alloc(2040, 0xab)])
      put("scan.img", tiff)
      const bmp = Buffer.concat([ascii("BM"), Buffer.from([0x46, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 0x28, 0, 0, 0]), Buffer.alloc(40, 1)])
      put("icon.png", bmp)
      const scan = yield* read("scan.img")
      expect(scan.attachments).toBeUndefined()
      expect(scan.output).toContain("(A TIFF image of 2.0 KB. It is not attached: images are attached as PNG, JPEG, GIF or WebP only.")
      expect(scan.output).not.toContain("\xab")
      const icon = yield* read("icon.png")
      expect(icon.attachments).toBeUndefined()
      expect(icon.output).toContain("(A BMP image of 58 bytes.")
    }))

  it.scopedLive("other binary files are refused, naming a known format", () =>
    Effect.gen(function*() {
      const { put, read } = yield* setup
      const zip = put("bundle.txt", Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0]), Buffer.alloc(30)]))
      const exit = yield* Effect.exit(read("bundle.txt"))
      if (Exit.isSuccess(exit) || exit.cause._tag !== "Fail") throw new Error("expected a refusal")
      expect(exit.cause.error.message).toBe(`Cannot read binary file: ${zip} (a ZIP archive, or a format built on ZIP such as docx, xlsx or jar)`)
    }))
})
