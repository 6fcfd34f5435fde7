// Loaded only when `agent session revert|unrevert` runs (see SessionCommand.ts and Lazy.ts).
import { makeAppLayer, SessionChanges, SessionStore } from "@agent/core"
import type { MessageID, PartID, SessionID } from "@agent/domain"
import { Console, Effect, Option } from "effect"
import { ExitCode, UsageError } from "./ExitCode.js"

interface Result {
  readonly restored: ReadonlyArray<string>
  readonly conflicts: ReadonlyArray<string>
}

const report = (verb: string, result: Result) =>
  Effect.gen(function*() {
    yield* Console.log(`${verb} ${result.restored.length} file${result.restored.length === 1 ? "" : "s"}`)
    for (const file of result.restored) yield* Console.log(`  ${file}`)
    if (result.conflicts.length === 0) return ExitCode.ok
    yield* Console.error(`left alone, changed since the session touched them:`)
    for (const file of result.conflicts) yield* Console.error(`  ${file}`)
    return ExitCode.runtime
  })

const asUsage = (error: { readonly message: string }) => new UsageError({ message: error.message })

/** Undoes the session's file changes from a message (or a part of it) on and hides the later messages. */
export const revert = (input: { readonly id: string; readonly message: string; readonly part: Option.Option<string> }) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const session = yield* store.get(input.id as SessionID)
    const result = yield* (yield* SessionChanges).revert({
      sessionID: session.id,
      messageID: input.message as MessageID,
      ...(Option.isSome(input.part) ? { partID: input.part.value as PartID } : {})
    }).pipe(Effect.mapError(asUsage))
    return yield* report("reverted", result)
  }).pipe(Effect.provide(makeAppLayer()))

/** Puts back what the last revert undid. */
export const unrevert = (input: { readonly id: string }) =>
  Effect.gen(function*() {
    const result = yield* (yield* SessionChanges).unrevert(input.id as SessionID).pipe(Effect.mapError(asUsage))
    return yield* report("restored", result)
  }).pipe(Effect.provide(makeAppLayer()))
