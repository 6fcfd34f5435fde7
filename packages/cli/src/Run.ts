// `agent run` on a runtime in this process (loaded only when it runs; see RunCommand.ts).
import {
  AgentRegistry,
  ApprovalStore,
  Bus,
  CommandRegistry,
  ConfigService,
  Hooks,
  Instance,
  makeAppLayer,
  Mcp,
  Permission,
  PermissionPolicy,
  PermissionService,
  ProviderRegistry,
  QuestionService,
  SessionLoop,
  SessionStore,
  ToolRegistry
} from "@agent/core"
import { type Agent, AgentNotFound, type DefaultAgentError, parseModelRef, type SessionID } from "@agent/domain"
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type AgentChoice, checkAgent, fallbackChoice } from "./AgentChoice.js"
import { UsageError } from "./ExitCode.js"
import { modelSource } from "./Replay.js"
import type { RunInput } from "./RunCommand.js"
import type { RunDescription } from "./RunApprovals.js"
import type { RunReport } from "./RunResult.js"
import { answerOf, atTerminal, type RunTarget, runOn, type TurnRequest } from "./RunTarget.js"
import { offerTrust } from "./TrustPrompt.js"

const checkDirectory = (dir: string) =>
  Effect.gen(function*() {
    const absolute = path.resolve(dir)
    const stat = yield* Effect.try(() => fs.statSync(absolute)).pipe(
      Effect.mapError(() => new UsageError({ message: `--dir: no such directory: ${dir}` }))
    )
    if (!stat.isDirectory()) return yield* new UsageError({ message: `--dir: not a directory: ${dir}` })
    return absolute
  })

export const run = (input: RunInput, report: RunReport) =>
  Effect.gen(function*() {
    const directory = Option.isSome(input.dir) ? yield* checkDirectory(input.dir.value) : undefined
    if (input.interactive && !atTerminal()) {
      return yield* new UsageError({ message: "--interactive needs a terminal on stdin and stderr" })
    }
    const source = yield* modelSource({
      ...(Option.isSome(input.record) ? { record: input.record.value } : {}),
      ...(Option.isSome(input.replay) ? { replay: input.replay.value } : {}),
      directory: directory ?? process.cwd()
    })
    const instance = source.instance ?? (directory === undefined ? undefined : Instance.layerWith({ directory }))
    // A person at the terminal decides on the project's own hooks before the runtime reads them.
    yield* offerTrust(instance ?? Instance.layer)
    // The whole runtime, in `--dir` when given (in the demo's scratch copy for `--replay demo`).
    return yield* Effect.flatMap(localTarget, (target) => runOn(input, target, report)).pipe(
      Effect.provide(makeAppLayer({ ...(instance ? { instance } : {}), ...(source.providers ? { providers: source.providers } : {}) }))
    )
  }).pipe(Effect.scoped)

/** The run's operations on the services of the runtime in this process. */
const localTarget = Effect.gen(function*() {
  const store = yield* SessionStore
  const loop = yield* SessionLoop
  const bus = yield* Bus
  const permissions = yield* PermissionService
  const questions = yield* QuestionService
  const commands = yield* CommandRegistry
  const instance = yield* Instance
  const agents = yield* AgentRegistry
  const approvals = yield* ApprovalStore
  const config = yield* (yield* ConfigService).get()
  const providers = yield* ProviderRegistry
  const tools = yield* ToolRegistry
  const mcp = yield* Mcp
  const policy = yield* PermissionPolicy
  const hooks = yield* Hooks

  /** For the `init` event: what the run will use, as far as it is known before the first step. */
  const describe = (wanted: string | undefined, modelFlag: string | undefined) =>
    Effect.gen(function*() {
      const chosen: Effect.Effect<Agent, AgentNotFound | DefaultAgentError> = wanted === undefined ? agents.defaultAgent() : agents.get(wanted)
      const agent = yield* Effect.option(chosen)
      const modelRef = modelFlag !== undefined
        ? Option.some(modelFlag)
        : Option.isSome(agent) && agent.value.model
        ? Option.some(`${agent.value.model.providerID}/${agent.value.model.modelID}`)
        : yield* providers.defaultModel().pipe(Effect.map((ref) => `${ref.providerID}/${ref.modelID}`), Effect.option)
      const rules = Option.isSome(agent) ? Permission.merge(agent.value.permission, policy.rules) : policy.rules
      const ids = (yield* tools.all()).map((tool) => tool.id)
      const hidden = Permission.disabled(ids, rules)
      const servers = yield* mcp.status()
      return {
        model: Option.getOrNull(modelRef),
        agent: Option.isSome(agent) ? agent.value.name : null,
        tools: ids.filter((id) => !hidden.has(id)),
        mcpServers: Object.entries(servers).map(([name, status]) => ({ name, status: status.status })),
        // The hooks that run (as `agent hooks list` shows them; an untrusted project's are left out).
        hooks: hooks.list().filter((hook) => hook.runs).map((hook) => ({ event: hook.event, command: hook.command, source: hook.file }))
      } satisfies RunDescription
    })

  const chooseAgent = (wanted: string | undefined) =>
    Effect.gen(function*() {
      if (wanted === undefined) return yield* Effect.as(agents.defaultAgent(), { agent: undefined } satisfies AgentChoice)
      const list = yield* agents.list()
      const check = checkAgent(wanted, list)
      if (check instanceof AgentNotFound) return yield* check
      if (check.runs) return { agent: wanted } satisfies AgentChoice
      return fallbackChoice(check.why, (yield* agents.defaultAgent()).name, list)
    })

  const turn = (request: TurnRequest) =>
    Effect.gen(function*() {
      const model = request.model !== undefined ? parseModelRef(request.model) : undefined
      const common = {
        sessionID: request.sessionID,
        ...(request.agent !== undefined ? { agent: request.agent } : {}),
        ...(model ? { model } : {}),
        autoApprove: request.autoApprove,
        ...(request.questions ? {} : { tools: { question: false } }),
        ...(request.maxSteps !== undefined ? { maxSteps: request.maxSteps } : {}),
        ...(request.variant !== undefined ? { variant: request.variant } : {})
      }
      const outcome = yield* (request.command
        ? commands.execute({ ...common, command: request.command.name, arguments: request.command.arguments, parts: request.parts }).pipe(
          Effect.catchTags({
            CommandNotFound: (error) => new UsageError({ message: error.message }),
            CommandError: (error) => new UsageError({ message: error.message })
          })
        )
        : loop.prompt({ ...common, parts: request.parts }))
      return {
        reason: outcome.reason,
        ...(outcome.error ? { error: outcome.error } : {}),
        usage: outcome.usage,
        answer: answerOf(outcome.message?.parts ?? [])
      }
    })

  return {
    directory: instance.directory,
    approvesItself: true,
    approvals: approvals.location(instance.projectID),
    chooseAgent,
    findSession: (id) =>
      store.get(id as SessionID).pipe(
        Effect.map((session) => session.id),
        Effect.mapError(() => new UsageError({ message: `session not found: ${id}` }))
      ),
    latestSession: store.list({ limit: 1 }).pipe(Effect.map((page) => page.items[0]?.id)),
    createSession: (title) => store.create(title !== undefined ? { title } : {}).pipe(Effect.map((session) => session.id)),
    forkSession: (id) => store.fork(id).pipe(Effect.map((session) => session.id)),
    subscribe: () => bus.subscribe(),
    replyPermission: (request, answer) => permissions.reply({ requestID: request.id, ...answer }).pipe(Effect.ignore),
    replyQuestion: (request, answers) =>
      (answers === undefined ? questions.reject(request.id) : questions.reply(request.id, answers)).pipe(Effect.ignore),
    turn,
    abort: (sessionID) => loop.abort(sessionID),
    totals: (sessionID) => store.get(sessionID).pipe(Effect.option),
    approverConfig: config.approver,
    notifyConfig: config.notify,
    describe
  } satisfies RunTarget<unknown>
})
