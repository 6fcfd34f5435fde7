import { AGENT_TOOLS, AgentGenerator } from "@agent/core"
import { type AgentMode, parseModelRef } from "@agent/domain"
import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as readline from "node:readline"
import { UsageError } from "./ExitCode.js"

const MODES = ["primary", "subagent", "all"] as const

const options = {
  description: Options.text("description").pipe(
    Options.withAlias("d"),
    Options.withDescription("what the agent should do and when to use it"),
    Options.optional
  ),
  mode: Options.choice("mode", MODES).pipe(
    Options.withDescription("primary (chosen by the user), subagent (called by other agents) or all (default)"),
    Options.optional
  ),
  tools: Options.text("tools").pipe(
    Options.withDescription(`comma-separated tools it may use (default all): ${Object.keys(AGENT_TOOLS).join(", ")}`),
    Options.optional
  ),
  global: Options.boolean("global").pipe(Options.withDescription("write to the global config dir instead of the project's .agent/agent/")),
  model: Options.text("model").pipe(Options.withAlias("m"), Options.withDescription("provider/model that writes the agent"), Options.optional)
}

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

export const agentCreateCommand = Command.make("create", options, (input) =>
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
  })
).pipe(Command.withDescription("Generate an agent from a description with the model and save it as a markdown agent file"))
