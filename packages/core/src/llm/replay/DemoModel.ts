/**
 * The demo's language model: streams each step DemoScript decides as a provider would (text in
 * word-sized deltas, then the tool calls, then `finish`), with no network. It stands at the
 * provider boundary, so the run above it is a real one.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart, LanguageModelV3Usage } from "@ai-sdk/provider"
import type { ModelRef } from "@agent/domain"
import { type DemoStep, nextStep } from "./DemoScript.js"

export const DEMO_MODEL: ModelRef = { providerID: "demo", modelID: "scripted" }

const NO_USAGE: LanguageModelV3Usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 }
}

const partsOf = (step: DemoStep, call: number): ReadonlyArray<LanguageModelV3StreamPart> => {
  const parts: Array<LanguageModelV3StreamPart> = [{ type: "stream-start", warnings: [] }]
  if (step.text) {
    const id = `demo-text-${call}`
    parts.push({ type: "text-start", id })
    for (const delta of step.text.match(/\S+\s*|\s+/g) ?? []) parts.push({ type: "text-delta", id, delta })
    parts.push({ type: "text-end", id })
  }
  step.calls.forEach((entry, index) => {
    parts.push({ type: "tool-call", toolCallId: `demo_${call}_${index}`, toolName: entry.name, input: JSON.stringify(entry.input) })
  })
  const reason = step.calls.length > 0 ? "tool-calls" : "stop"
  parts.push({ type: "finish", finishReason: { unified: reason, raw: reason }, usage: NO_USAGE })
  return parts
}

const stepOf = (options: LanguageModelV3CallOptions) =>
  nextStep(options.prompt, (options.tools ?? []).map((tool) => tool.name))

/** A fresh demo model; `calls` numbers the tool call ids, which only need to be unique in a run. */
export const make = (): LanguageModelV3 => {
  let calls = 0
  return {
    specificationVersion: "v3",
    provider: DEMO_MODEL.providerID,
    modelId: DEMO_MODEL.modelID,
    supportedUrls: {},
    async doStream(options) {
      const parts = [...partsOf(stepOf(options), ++calls)]
      const signal = options.abortSignal
      return {
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          pull(controller) {
            if (signal?.aborted) return controller.error(signal.reason)
            const part = parts.shift()
            if (part !== undefined) controller.enqueue(part)
            else controller.close()
          }
        })
      }
    },
    async doGenerate(options) {
      const step = stepOf(options)
      const call = ++calls
      return {
        content: [
          ...(step.text ? [{ type: "text" as const, text: step.text }] : []),
          ...step.calls.map((entry, index) => ({
            type: "tool-call" as const,
            toolCallId: `demo_${call}_${index}`,
            toolName: entry.name,
            input: JSON.stringify(entry.input)
          }))
        ],
        finishReason: { unified: step.calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
        usage: NO_USAGE,
        warnings: []
      }
    }
  }
}
