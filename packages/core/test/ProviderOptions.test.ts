import { describe, expect, it } from "@effect/vitest"
import { callOptions, hasVariant, mergeOptions, providerOptions, variantOptions } from "../src/llm/ProviderOptions.js"

const info = { providerID: "local", modelID: "qwen", name: "qwen", limit: { context: 1000, output: 100 } }
const variants = { high: { reasoningEffort: "high" }, off: { disabled: true, reasoningEffort: "minimal" }, on: { disabled: false, x: 1 } }

describe("mergeOptions", () => {
  it.each([
    ["later scalars win", { a: 1, b: 2 }, { b: 3 }, { a: 1, b: 3 }],
    ["objects merge key by key", { k: { a: 1, b: { c: 1 } } }, { k: { b: { d: 2 } } }, { k: { a: 1, b: { c: 1, d: 2 } } }],
    ["arrays are replaced", { list: [1, 2] }, { list: [3] }, { list: [3] }],
    ["an object replaces a scalar", { k: "x" }, { k: { a: 1 } }, { k: { a: 1 } }],
    ["a scalar replaces an object", { k: { a: 1 } }, { k: false }, { k: false }],
    ["nothing over something", { a: 1 }, {}, { a: 1 }]
  ])("%s", (_, base, over, expected) => {
    expect(mergeOptions(base, over)).toEqual(expected)
  })

  it("leaves its inputs alone", () => {
    const base = { k: { a: 1 } }
    mergeOptions(base, { k: { b: 2 } })
    expect(base).toEqual({ k: { a: 1 } })
  })
})

describe("variants", () => {
  it.each([
    ["a named variant", "high", { reasoningEffort: "high" }],
    ["a disabled variant gives nothing", "off", {}],
    ["`disabled: false` is not sent", "on", { x: 1 }],
    ["an unknown variant gives nothing", "ultra", {}],
    ["no variant gives nothing", undefined, {}]
  ])("%s", (_, name, expected) => {
    expect(variantOptions(variants, name)).toEqual(expected)
  })

  it("hasVariant: only variants the model has and that are not disabled", () => {
    expect([hasVariant(variants, "high"), hasVariant(variants, "off"), hasVariant(variants, "ultra"), hasVariant(undefined, "high")])
      .toEqual([true, false, false, false])
  })
})

describe("a call's provider options", () => {
  it("the model's options, then the agent's, then the variant's, under the SDK's key", () => {
    const model = { info, options: { reasoningEffort: "low", kwargs: { a: 1, b: 1 } }, variants, optionsKey: "local" }
    const agent = { options: { reasoningEffort: "medium", kwargs: { b: 2 } } }
    expect(providerOptions(model, callOptions({ model, agent }))).toEqual({
      local: { reasoningEffort: "medium", kwargs: { a: 1, b: 2 } }
    })
    expect(providerOptions(model, callOptions({ model, agent, variant: "high" }))).toEqual({
      local: { reasoningEffort: "high", kwargs: { a: 1, b: 2 } }
    })
  })

  it("no options at all sends none; without a key the provider id is used", () => {
    expect(providerOptions({ info }, callOptions({ model: {}, agent: { options: {} } }))).toBeUndefined()
    expect(providerOptions({ info }, { store: false })).toEqual({ local: { store: false } })
  })
})
