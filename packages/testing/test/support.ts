import type { LanguageModelV3Prompt } from "@ai-sdk/provider"
import { jsonSchema, tool } from "ai"
import { Effect } from "effect"

/** Every element of an async iterable (Node 20 has no `Array.fromAsync`). */
export const collect = <A>(iterable: AsyncIterable<A>): Effect.Effect<Array<A>> =>
  Effect.promise(async () => {
    const out: Array<A> = []
    for await (const item of iterable) out.push(item)
    return out
  })

/** Milliseconds `effect` took, in real time. */
export const timed = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<[A, number], E, R> =>
  Effect.suspend(() => {
    const started = performance.now()
    return Effect.map(effect, (value): [A, number] => [value, performance.now() - started])
  })

/** The text outputs of the tool results in a prompt. */
export const toolOutputs = (prompt: LanguageModelV3Prompt): Array<string> =>
  prompt.flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) =>
        part.type === "tool-result" && part.output.type === "text" ? [part.output.value] : []
      )
      : []
  )

/** The elements an async iterable yields before it fails, and the failure (if any). */
export const collectUntilFailure = <A>(
  iterable: AsyncIterable<A>
): Effect.Effect<{ readonly items: Array<A>; readonly failure: unknown }> =>
  Effect.promise(async () => {
    const items: Array<A> = []
    try {
      for await (const item of iterable) items.push(item)
      return { items, failure: undefined }
    } catch (failure) {
      return { items, failure }
    }
  })

/** `streamText`'s default `onError` logs to the console; tests that expect errors silence it. */
export const quiet = { onError: () => {} } as const

/** A tool the SDK runs itself, for tests that drive `streamText` across several steps. */
export const readTool = tool({
  description: "Read a file",
  inputSchema: jsonSchema<{ path: string }>({
    type: "object",
    properties: { path: { type: "string" } },
    required: ["path"]
  }),
  execute: async ({ path }) => `contents of ${path}`
})
