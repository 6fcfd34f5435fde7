import { describe, expect, it } from "@effect/vitest"
import { continuity, parseSse } from "../src/Sse.js"

describe("parseSse", () => {
  it("splits whole events and keeps the unfinished rest for the next chunk", () => {
    const first = parseSse('data: {"type":"server.connected"}\n\nid: 7\ndata: {"a":1}\n\nid: 8\nda')
    expect(first.frames).toEqual([{ data: '{"type":"server.connected"}' }, { id: "7", data: '{"a":1}' }])
    const second = parseSse(first.rest + 'ta: {"b":2}\n\n')
    expect(second).toEqual({ frames: [{ id: "8", data: '{"b":2}' }], rest: "" })
  })
  it("joins data lines, ignores comments, takes CRLF", () => {
    expect(parseSse(": ping\r\ndata: a\r\ndata: b\r\n\r\n").frames).toEqual([{ data: "a\nb" }])
  })
})

describe("continuity", () => {
  const cases: ReadonlyArray<[number | undefined, number, string]> = [
    [undefined, 40, "next"],
    [10, 11, "next"],
    [10, 15, "gap"],
    [10, 1, "restart"],
    [10, 10, "restart"]
  ]
  for (const [last, id, expected] of cases) it(`${last} then ${id}: ${expected}`, () => expect(continuity(last, id)).toBe(expected))
})
