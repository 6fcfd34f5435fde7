import { AgentRegistry, ApprovalStore, CommandRegistry, ConfigService, Instance, InstructionLoader, Mcp, redactSecrets, shownConfig, SkillRegistry, VERSION } from "@agent/core"
import { Agent, AgentApi } from "@agent/domain"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"

export const InstanceHandlers = HttpApiBuilder.group(AgentApi, "instance", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* AgentRegistry
    const config = yield* ConfigService
    const mcp = yield* Mcp
    const commands = yield* CommandRegistry
    const instance = yield* Instance
    const instructions = yield* InstructionLoader
    const skills = yield* SkillRegistry
    const approvals = yield* ApprovalStore
    return handlers
      .handle("commands", () => commands.list())
      .handle("instructions", ({ urlParams }) =>
        Effect.all({
          system: instructions.sources(),
          attached: urlParams.sessionID ? instructions.attached(urlParams.sessionID) : Effect.succeed([])
        }))
      .handle("skills", () =>
        Effect.map(skills.list(), (list) => list.map((skill) => ({ name: skill.name, description: skill.description, location: skill.location }))))
      // Secrets stay on the server: keys, headers and {env:}/{file:} texts are masked (ConfigRedaction.ts).
      .handle("agents", () =>
        Effect.zipWith(agents.list(), config.info(), (list, info) =>
          list.map((agent) => new Agent({ ...agent, options: redactSecrets(agent.options, info.substitutions) }))))
      .handle("config", () => Effect.map(config.info(), shownConfig))
      .handle("mcp", () => mcp.status())
      .handle("path", () =>
        Effect.succeed({
          home: instance.home,
          state: instance.paths.data,
          config: instance.paths.config,
          worktree: instance.worktree,
          directory: instance.directory,
          approvals: approvals.location(instance.projectID)
        }))
      .handle("health", () => Effect.succeed({ healthy: true as const, version: VERSION }))
      .handle("memory", () =>
        Effect.sync(() => {
          const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage()
          return { rss, heapTotal, heapUsed, external, arrayBuffers }
        }))
  }))
