// Loaded only when `agent agent create` runs (see AgentCommand.ts and Lazy.ts).
import { AGENT_TOOLS, AgentGenerator, makeAppLayer } from "@agent/core"
import { type AgentMode, parseModelRef } from "@agent/domain"
import { Console, Effect, Option } from "effect"
import * as readline from "node:readline"
import { UsageError } from "./ExitCode.js"
import type { AgentCreateInput } from "./AgentCommand.js"

/** One question on the terminal; the answer trimmed. */
const ask = (question: string) =>
  Effect.async<string>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr })
    rl.question(question, (answer) => {
      rl.close()
      resume(Effect.succeed(answer.trim()))
    })
    return Effect.sync(() => rl.close())
  })

/** `all`/empty means every tool; otherwise the names, checked. */
const parseTools = (value: string): Effect.Effect<ReadonlyArray<string> | undefined, UsageError> => {
  const names = value.split(/[\s,]+/).filter((name) => name.length > 0)
  if (names.length === 0 || (names.length === 1 && names[0] === "all")) return Effect.succeed(undefined)
  const unknown = names.filter((name) => !(name in AGENT_TOOLS))
  return unknown.length > 0
    ? Effect.fail(new UsageError({ message: `unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}; choose from ${Object.keys(AGENT_TOOLS).join(", ")}` }))
    : Effect.succeed(names)
}

export const create = (input: AgentCreateInput) =>
  Effect.gen(function*() {
    const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true
    const model = Option.isSome(input.model) ? parseModelRef(input.model.value) : undefined
    if (Option.isSome(input.model) && !model) return yield* new UsageError({ message: `--model must be provider/model, got "${input.model.value}"` })

    let description = Option.getOrUndefined(input.description)?.trim() ?? ""
    if (!description && interactive) description = yield* ask("What should the agent do, and when should it be used? ")
    if (!description) {
      return yield* new UsageError({ message: "--description is required: say what the agent should do" })
    }

    let mode: AgentMode = Option.getOrElse(input.mode, () => "all" as const)
    if (Option.isNone(input.mode) && interactive) {
      const answer = (yield* ask("Mode: [a]ll (default), [p]rimary, [s]ubagent? ")).toLowerCase()
      mode = answer.startsWith("p") ? "primary" : answer.startsWith("s") ? "subagent" : "all"
    }

    let toolsText = Option.getOrUndefined(input.tools)
    if (toolsText === undefined && interactive) {
      toolsText = yield* ask(`Tools it may use, comma-separated (${Object.keys(AGENT_TOOLS).join(", ")}), or empty for all: `)
    }
    const tools = yield* parseTools(toolsText ?? "")

    if (interactive) yield* Console.error("Generating the agent…")
    const created = yield* (yield* AgentGenerator).create({
      description,
      mode,
      global: input.global,
      ...(tools ? { tools } : {}),
      ...(model ? { model } : {})
    })
    yield* Console.log(`Created agent "${created.name}" (${created.mode}) in ${created.file}`)
    if (created.denied.length > 0) yield* Console.log(`Denied: ${created.denied.join(", ")}`)
    yield* Console.log(`When to use: ${created.description}`)
  }).pipe(Effect.provide(makeAppLayer()))
