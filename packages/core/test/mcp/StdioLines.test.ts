import { describe, expect, it } from "@effect/vitest"
import { answerId, megabytes, type StdioEvent, StdioLines } from "../../src/mcp/StdioLines.js"

const feed = (lines: StdioLines, ...chunks: Array<string>): Array<StdioEvent> =>
  chunks.flatMap((chunk) => lines.push(Buffer.from(chunk)))

describe("StdioLines", () => {
  it("splits lines across chunks, drops blank lines and a CR before the line break", () => {
    const lines = new StdioLines(100)
    expect(feed(lines, "{\"a\":", "1}\r\n\n  \n{\"b\"", ":2}\n{\"c\"")).toEqual([
      { _tag: "Line", text: "{\"a\":1}" },
      { _tag: "Line", text: "{\"b\":2}" }
    ])
    expect(feed(lines, ":3}\n")).toEqual([{ _tag: "Line", text: "{\"c\":3}" }])
  })

  it("keeps a character split between chunks whole", () => {
    const lines = new StdioLines(100)
    const bytes = Buffer.from("\"é\"\n")
    expect([...lines.push(bytes.subarray(0, 2)), ...lines.push(bytes.subarray(2))]).toEqual([{ _tag: "Line", text: "\"é\"" }])
  })

  it("reports a line over the limit once when it passes it and once when it ends, with its edges; the next line is whole", () => {
    const lines = new StdioLines(10)
    expect(feed(lines, "0123456789")).toEqual([])
    expect(feed(lines, "abc", "def")).toEqual([{ _tag: "Overflow", limit: 10 }])
    expect(feed(lines, "gh\nnext\n")).toEqual([
      { _tag: "Oversized", bytes: 18, head: "0123456789abc", tail: "0123456789abcdefgh" },
      { _tag: "Line", text: "next" }
    ])
  })

  it("a line of exactly the limit is a line", () => {
    expect(feed(new StdioLines(4), "abcd\n")).toEqual([{ _tag: "Line", text: "abcd" }])
  })
})

describe("answerId", () => {
  const big = "x".repeat(50)
  it.each([
    ["the TypeScript SDK's answer (id last)", `{"result":{"content":[{"type":"text","text":"${big}`, `${big}"}]},"jsonrpc":"2.0","id":3}`, 3],
    ["an answer with the id first", `{"jsonrpc":"2.0","id":"req-1","result":{"text":"${big}`, `${big}"}}`, "req-1"],
    ["an answer with only the id first", `{"id":7,"result":"${big}`, `${big}"}`, 7],
    ["an error answer", `{"jsonrpc": "2.0", "id": 4, "error": {"message": "${big}`, `${big}"}}`, 4],
    ["a notification", `{"method":"notifications/progress","params":{"message":"${big}`, `${big}"},"jsonrpc":"2.0"}`, undefined],
    ["a request from the server", `{"method":"sampling/createMessage","params":{"x":"${big}`, `${big}"},"jsonrpc":"2.0","id":0}`, undefined],
    ["a request with the id first", `{"jsonrpc":"2.0","id":1,"method":"roots/list","params":{"x":"${big}`, `${big}"}}`, undefined],
    ["an id nested in the result", `{"result":{"items":[{"id":9,"v":"${big}`, `${big}","id":9}]}}`, undefined],
    ["garbage", big, big, undefined]
  ])("%s", (_name, head, tail, expected) => {
    expect(answerId(head, tail)).toBe(expected)
  })
})

describe("megabytes", () => {
  it.each([[10 * 1024 * 1024, "10 MB"], [11.5 * 1024 * 1024, "11.5 MB"], [1024 * 1024 + 1, "1.0 MB"]])("%d is %s", (bytes, text) => {
    expect(megabytes(bytes)).toBe(text)
  })
})
