import { AgentRegistry, ConfigService, Permission } from "@agent/core"
import type { Agent, PermissionRule } from "@agent/domain"
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"

const json = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const describeSource = (rule: PermissionRule) => {
  const source = rule.source
  if (!source) return ""
  const where = source.file ? `${source.file}${source.key ? ` (${source.key})` : ""}` : (source.note ?? "")
  return `${source.layer}${where ? `: ${where}` : ""}`
}

const config = Command.make(
  "config",
  { key: Options.text("origin").pipe(Options.withDescription("print where a dotted key was set, e.g. permission.bash"), Options.optional) },
  ({ key }) =>
    Effect.gen(function*() {
      const info = yield* (yield* ConfigService).info()
      if (Option.isSome(key)) {
        const origin = info.origin(key.value.split("."))
        return yield* Console.log(origin ? `${origin.file}${origin.line ? `:${origin.line}` : ""} (${origin.key})` : "not set")
      }
      yield* json({ config: info.config, sources: info.sources, warnings: info.warnings })
    })
).pipe(Command.withDescription("Print the effective configuration and the files it came from"))

const agentSummary = (agent: Agent) => ({
  name: agent.name,
  mode: agent.mode,
  hidden: agent.hidden ?? false,
  native: agent.native,
  description: agent.description,
  model: agent.model ? `${agent.model.providerID}/${agent.model.modelID}` : undefined,
  steps: agent.steps,
  source: agent.source
})

const agent = Command.make(
  "agent",
  { name: Args.text({ name: "name" }).pipe(Args.optional) },
  ({ name }) =>
    Effect.gen(function*() {
      const registry = yield* AgentRegistry
      if (Option.isNone(name)) {
        for (const agent of yield* registry.list()) {
          yield* Console.log(`${agent.name.padEnd(20)} ${agent.mode}${agent.hidden ? " (hidden)" : ""}`)
        }
        return
      }
      const found = yield* registry.get(name.value)
      yield* json({
        ...agentSummary(found),
        permission: found.permission.map((rule) => ({
          permission: rule.permission,
          pattern: rule.pattern,
          action: rule.action,
          from: describeSource(rule)
        }))
      })
    })
).pipe(Command.withDescription("List agents, or show one agent with its permission rules"))

const permission = Command.make(
  "permission",
  {
    permission: Args.text({ name: "permission" }).pipe(Args.withDescription("e.g. bash, edit, webfetch")),
    pattern: Args.text({ name: "pattern" }).pipe(Args.withDescription('e.g. "git push origin main" or a path')),
    agent: Options.text("agent").pipe(Options.withDescription("agent whose rules apply (default: the default agent)"), Options.optional)
  },
  (input) =>
    Effect.gen(function*() {
      const registry = yield* AgentRegistry
      const chosen = Option.isSome(input.agent) ? yield* registry.get(input.agent.value) : yield* registry.defaultAgent()
      const explanation = Permission.explain(input.permission, input.pattern, chosen.permission)
      yield* Console.log(`${explanation.rule.action}  (agent ${chosen.name})`)
      yield* Console.log(
        explanation.matched
          ? `decided by: ${explanation.rule.permission} ${JSON.stringify(explanation.rule.pattern)} → ${explanation.rule.action}  [${describeSource(explanation.rule)}]`
          : "no rule matched: the default is to ask"
      )
      if (explanation.considered.length > 0) yield* Console.log("rules considered, in order (last match wins):")
      for (const { matches, rule } of explanation.considered) {
        yield* Console.log(
          `  ${matches ? "✓" : " "} ${rule.permission} ${JSON.stringify(rule.pattern)} → ${rule.action}  [${describeSource(rule)}]`
        )
      }
    })
).pipe(Command.withDescription("Explain which rule decides a permission for a pattern"))

export const debug = Command.make("debug").pipe(
  Command.withDescription("Inspect configuration, agents and permission decisions"),
  Command.withSubcommands([config, agent, permission])
)
