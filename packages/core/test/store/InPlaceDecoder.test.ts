import { Message, Part } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
// the schemas' arbitraries come from the fast-check that effect bundles: use its runner too
import { Arbitrary, FastCheck as fc, Schema } from "effect"
import { makeInPlaceDecoder, takesFastPath } from "../../src/store/InPlaceDecoder.js"

/** What a decoder gives for a value: the decoded value, or the message it throws. */
const outcome = (decode: (input: unknown) => unknown, input: unknown) => {
  try {
    return { ok: decode(input) }
  } catch (error) {
    return { error: String(error) }
  }
}

/** JSON-like noise to put where a field was. */
const noise = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 })
)

/** Every object and array inside a value, with the way to reach it. */
const containers = (value: unknown): Array<Record<string, unknown> | Array<unknown>> => {
  if (typeof value !== "object" || value === null) return []
  const own = Array.isArray(value) ? value : Object.values(value)
  return [value as Record<string, unknown>, ...own.flatMap(containers)]
}

/** One random damage: a key dropped, changed to noise, or added. */
const mutate = (value: unknown, pick: number, key: string, replacement: unknown, kind: number) => {
  const copy = structuredClone(value)
  const all = containers(copy)
  if (all.length === 0) return replacement
  const container = all[pick % all.length]!
  if (Array.isArray(container)) {
    // an array loses an element, has one replaced, or gains one (never a named key such as "length")
    const index = container.length > 0 ? pick % container.length : 0
    if (kind === 0) container.splice(index, 1)
    else if (kind === 1 && container.length > 0) container[index] = replacement
    else container.push(replacement)
    return copy
  }
  const target = container
  const keys = Object.keys(target)
  const existing = keys.length > 0 ? keys[pick % keys.length]! : key
  if (kind === 0) delete target[existing]
  else if (kind === 1) target[existing] = replacement
  else target[key] = replacement
  return copy
}

/** Whether a parsed JSON value has an own `__proto__` key somewhere (such values always take the decoder). */
const hasProtoKey = (value: unknown): boolean =>
  containers(value).some((c) => !Array.isArray(c) && Object.prototype.hasOwnProperty.call(c, "__proto__"))

const agreesWithDecoder = <A, I>(name: string, schema: Schema.Schema<A, I, never>) =>
  describe(name, () => {
    const fast = makeInPlaceDecoder(schema)
    const slow = Schema.decodeUnknownSync(schema)
    const valid = Arbitrary.make(schema)

    it("gives back valid values themselves, equal to what the decoder builds", () => {
      const plain = takesFastPath(schema)
      fc.assert(
        fc.property(valid, (value) => {
          // as stored: a JSON round trip drops undefined fields
          const stored = JSON.parse(JSON.stringify(value)) as unknown
          fc.pre(outcome(slow, stored).ok !== undefined) // JSON has no Infinity: such a value is no longer valid
          const expected = slow(structuredClone(stored))
          const inPlace = plain(stored)
          // the only valid values not kept in place hold a `__proto__` key (in a record the schema walks;
          // one inside an `unknown` field is the value's own business), and those go through the decoder
          if (!inPlace) expect(hasProtoKey(stored)).toBe(true)
          const result = fast(stored)
          if (inPlace) expect(result).toBe(stored)
          expect(result).toEqual(expected)
        }),
        { numRuns: 300 }
      )
    })

    it("gives the decoder's value or the decoder's error for damaged values", () => {
      fc.assert(
        fc.property(
          valid,
          fc.nat(),
          fc.string({ minLength: 1, maxLength: 6 }),
          noise,
          fc.integer({ min: 0, max: 2 }),
          (value, pick, key, replacement, kind) => {
            // as it would come out of JSON.parse
            const damaged = JSON.parse(JSON.stringify(mutate(value, pick, key, replacement, kind)) ?? "null") as unknown
            expect(outcome(fast, structuredClone(damaged))).toEqual(outcome(slow, structuredClone(damaged)))
          }
        ),
        { numRuns: 1000 }
      )
    })
  })

agreesWithDecoder("Part", Part)
agreesWithDecoder("Message", Message)

describe("InPlaceDecoder edge cases", () => {
  const part = {
    id: "prt_0123456789abcdefABCDEFGHIJ",
    sessionID: "ses_0123456789abcdefABCDEFGHIJ",
    messageID: "msg_0123456789abcdefABCDEFGHIJ",
    type: "text",
    text: "hello"
  }

  it("drops a key the schema does not know, as the decoder does", () => {
    const decode = makeInPlaceDecoder(Part)
    const result = decode({ ...part, extra: 1 })
    expect(result).toEqual(part)
    expect("extra" in result).toBe(false)
  })

  it("drops a __proto__ key of stored JSON, as the decoder does", () => {
    const decode = makeInPlaceDecoder(Part)
    const stored = JSON.parse(JSON.stringify({ ...part, text: undefined, type: "tool", callID: "c", tool: "bash" }).replace(
      /}$/,
      `,"state":{"status":"pending","input":{"__proto__":0,"a":1},"raw":""}}`
    )) as unknown
    const slow = Schema.decodeUnknownSync(Part)(structuredClone(stored))
    const fast = decode(stored)
    expect(fast).toEqual(slow)
    if (fast.type !== "tool" || slow.type !== "tool") throw new Error("not a tool part")
    expect(Object.keys(fast.state.input)).toEqual(["a"])
  })

  it("reports a broken id with the decoder's message", () => {
    const decode = makeInPlaceDecoder(Part)
    expect(() => decode({ ...part, id: "prt_short" })).toThrow(/expected an id of the form prt_<26 chars>/)
  })

  it("still transforms where the schema transforms", () => {
    const schema = Schema.Struct({ count: Schema.NumberFromString, name: Schema.String })
    const decode = makeInPlaceDecoder(schema)
    expect(decode({ count: "3", name: "a" })).toEqual({ count: 3, name: "a" })
    expect(() => decode({ count: "x", name: "a" })).toThrow(/NumberFromString/)
  })

  it("handles recursive schemas", () => {
    interface Tree {
      readonly name: string
      readonly children: ReadonlyArray<Tree>
    }
    const Tree: Schema.Schema<Tree> = Schema.Struct({
      name: Schema.String,
      children: Schema.Array(Schema.suspend((): Schema.Schema<Tree> => Tree))
    })
    const decode = makeInPlaceDecoder(Tree)
    const tree = { name: "a", children: [{ name: "b", children: [] }] }
    expect(decode(tree)).toBe(tree)
    expect(() => decode({ name: "a", children: [{ name: 1, children: [] }] })).toThrow(/name/)
  })
})
