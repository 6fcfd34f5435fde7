// Subagents: a child session run for a task call (or a subtask part of a prompt), its rules, its
// nesting limit, and its progress shown on the parent's task part.
import type { Agent, AssistantMessage, ModelRef, PartID, PermissionRuleset, SessionID, ToolPart, UserMessage } from "@agent/domain"
import { Cause, Effect, Exit, Option, Stream } from "effect"
import * as Identifier from "../runtime/Identifier.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import type { ResolvedModel } from "../llm/ProviderRegistry.js"
import * as Permission from "../permission/Permission.js"
import * as Tool from "../tool/Tool.js"
import type { SubagentPort, TaskParams } from "../tools/Task.js"
import { childRules } from "./ChildRules.js"
import { type SubtaskPart, subagentResult } from "./Decisions.js"
import type { LoopDeps } from "./LoopDeps.js"
import type { LoopError, PromptInput, RunOutcome } from "./LoopTypes.js"
import { finishMessage, type RunState, startAssistantMessage, writePart } from "./RunState.js"

/** What a subagent needs of the loop: starting a child's run, stopping it, the parent's run settings. */
export interface LoopControl {
  readonly prompt: (input: PromptInput) => Effect.Effect<RunOutcome, LoopError>
  readonly abort: (sessionID: SessionID) => Effect.Effect<void>
  /** Whether the session's run answers asks by itself (its children inherit it). */
  readonly autoApprove: (sessionID: SessionID) => boolean
}

/** The subagents `agent` may start: not primary, not hidden, not denied by its `task` rules. */
export const subagentsFor = (deps: LoopDeps, agent: Agent) =>
  Effect.map(deps.agents.list(), (all) =>
    all.filter((candidate) =>
      candidate.mode !== "primary" && !candidate.hidden &&
      Permission.evaluate("task", candidate.name, agent.permission).action !== "deny"
    ))

/** How many parents a session has. */
const depthOf = (deps: LoopDeps, sessionID: SessionID): Effect.Effect<number> =>
  Effect.gen(function*() {
    let depth = 0
    let current = yield* deps.store.get(sessionID).pipe(Effect.orDie)
    while (current.parentID) {
      depth++
      current = yield* deps.store.get(current.parentID).pipe(Effect.orDie)
    }
    return depth
  })

/** The child session's rules (ChildRules.ts), with every permission the tools know of. */
const childRulesFor = (deps: LoopDeps, parent: Agent, parentSession: PermissionRuleset, subagent: Agent, childDepth: number) =>
  Effect.gen(function*() {
    const tools = [...(yield* deps.registry.all()), ...(yield* deps.mcp.tools())]
    const permissions = [...new Set([...tools.map((tool) => Permission.permissionOfTool(tool.id)), "task", "external_directory"])]
    return childRules({
      parent,
      parentSession,
      subagent,
      childDepth,
      subagentDepth: deps.settings.subagentDepth,
      permissions,
      primaryTools: deps.settings.primaryTools.map(Permission.permissionOfTool)
    })
  })

type CallContext = Pick<Tool.ToolContext, "sessionID" | "messageID" | "agent" | "metadata">

/** Live progress: the child's tool calls, as the parent's task part metadata (until the scope closes). */
const followProgress = (deps: LoopDeps, childID: SessionID, context: CallContext) =>
  Effect.gen(function*() {
    const progress = new Map<string, { id: string; tool: string; status: string; title?: string }>()
    const updates = yield* deps.bus.subscribe({ types: ["message.part.updated"] })
    yield* updates.pipe(
      Stream.filter((event) => event.properties.part.sessionID === childID && event.properties.part.type === "tool"),
      Stream.runForEach((event) => {
        const part = event.properties.part as ToolPart
        const title = part.state.status === "completed" || part.state.status === "running" ? part.state.title : undefined
        progress.set(part.id, { id: part.id, tool: part.tool, status: part.state.status, ...(title ? { title } : {}) })
        return context.metadata({ metadata: { sessionId: childID, summary: [...progress.values()] } })
      }),
      Effect.catchAllCause((cause) => Effect.logError("subagent progress stopped", cause)),
      Effect.forkScoped
    )
    return progress
  })

/** Runs (or resumes) a subagent in a child session and returns its last answer. */
export const runSubagent = (
  deps: LoopDeps,
  control: LoopControl,
  params: Omit<TaskParams, "command">,
  context: CallContext,
  /** `model`: the model a subtask part asked for (a command's), over the subagent's own. */
  options: { readonly ask: Tool.ToolContext["ask"] | undefined; readonly model?: ModelRef | undefined }
) =>
  Effect.gen(function*() {
    const { store } = deps
    const subagentDepth = deps.settings.subagentDepth
    const fail = (detail: string) => new Tool.ToolExecutionError({ tool: "task", detail })
    const available = yield* subagentsFor(deps, context.agent)
    const subagent = available.find((candidate) => candidate.name === params.subagent_type)
    if (!subagent) {
      return yield* fail(
        `Unknown subagent "${params.subagent_type}". Available: ${available.map((candidate) => candidate.name).join(", ") || "none"}`
      )
    }
    if (options.ask) yield* options.ask({ permission: "task", patterns: [subagent.name], always: [subagent.name] })
    const parentSession = yield* store.get(context.sessionID).pipe(Effect.orDie)
    const childDepth = (yield* depthOf(deps, context.sessionID)) + 1
    if (childDepth > subagentDepth) return yield* fail(`Subagents cannot start further subagents here (subagent_depth is ${subagentDepth}).`)

    const resumed = params.task_id ? yield* store.get(params.task_id as SessionID).pipe(Effect.option) : Option.none()
    if (params.task_id && (Option.isNone(resumed) || resumed.value.parentID !== context.sessionID)) {
      return yield* fail(`No subagent session ${params.task_id} belongs to this session; leave task_id out to start a new one.`)
    }
    const child = Option.isSome(resumed)
      ? resumed.value
      : yield* store.create({
        parentID: context.sessionID,
        title: `${params.description} (@${subagent.name} subagent)`,
        agent: subagent.name,
        permission: yield* childRulesFor(deps, context.agent, parentSession.permission ?? [], subagent, childDepth)
      }).pipe(Effect.orDie)

    const parentMessage = yield* store.getMessage(context.sessionID, context.messageID).pipe(Effect.orDie)
    const parentModel = parentMessage.info.role === "assistant"
      ? { providerID: parentMessage.info.providerID, modelID: parentMessage.info.modelID }
      : undefined
    const model = options.model ?? subagent.model ?? parentModel

    const progress = yield* followProgress(deps, child.id, context)
    yield* context.metadata({ title: params.description, metadata: { sessionId: child.id, summary: [] } })
    const outcome = yield* control.prompt({
      sessionID: child.id,
      parts: [{ type: "text", text: params.prompt }],
      agent: subagent.name,
      ...(model ? { model } : {}),
      autoApprove: control.autoApprove(context.sessionID)
    }).pipe(
      Effect.onInterrupt(() => control.abort(child.id)),
      Effect.mapError((error) => fail(`The ${subagent.name} subagent could not start: ${error.message}`))
    )
    const output = subagentResult(child.id, outcome)
    if (outcome.reason !== "completed") {
      const why = outcome.error?.data.message ?? outcome.reason
      return yield* fail(`The ${subagent.name} subagent stopped before finishing (${why}).\n${output}\nPass task_id="${child.id}" to resume it.`)
    }
    return {
      title: params.description,
      output,
      metadata: { sessionId: child.id, summary: [...progress.values()], agent: subagent.name, cost: outcome.usage.cost }
    } satisfies Tool.ToolResult
  }).pipe(Effect.scoped)

/** The task tool's way into the loop. */
export const subagentPort = (deps: LoopDeps, control: LoopControl): SubagentPort => ({
  available: (agent) => subagentsFor(deps, agent),
  run: (params, context) => runSubagent(deps, control, params, context, { ask: context.ask })
})

/** Runs a requested subtask as a task call of a new assistant message; the model then sees its result. */
export const runPendingSubtask = (
  deps: LoopDeps,
  control: LoopControl,
  state: RunState,
  input: { subtask: SubtaskPart; user: LiveMessage & { info: UserMessage }; agent: Agent; model: ResolvedModel }
) =>
  Effect.gen(function*() {
    const { subtask, agent } = input
    const message = yield* startAssistantMessage(deps, state, input.user, agent, input.model)
    const info = message.info as AssistantMessage
    const params = { description: subtask.description, prompt: subtask.prompt, subagent_type: subtask.agent }
    const started = Date.now()
    const call = {
      part: {
        id: Identifier.ascending("part") as PartID,
        sessionID: state.sessionID,
        messageID: info.id,
        type: "tool",
        callID: `subtask_${subtask.id}`,
        tool: "task",
        state: { status: "running", input: params, time: { start: started } },
        metadata: { subtask: subtask.id }
      } as ToolPart
    }
    yield* writePart(deps, state, message, call.part)
    const exit = yield* Effect.exit(runSubagent(deps, control, params, {
      sessionID: state.sessionID,
      messageID: info.id,
      agent,
      metadata: (update) =>
        Effect.suspend(() => {
          const part = call.part
          if (part.state.status !== "running") return Effect.void
          call.part = {
            ...part,
            state: { ...part.state, ...(update.title ? { title: update.title } : {}), metadata: { ...part.state.metadata, ...update.metadata } }
          }
          return writePart(deps, state, message, call.part)
        })
    }, { ask: undefined, model: subtask.model }))
    const part = call.part
    const metadata = part.state.status === "running" ? part.state.metadata ?? {} : {}
    if (Exit.isSuccess(exit)) {
      yield* writePart(deps, state, message, {
        ...part,
        state: {
          status: "completed",
          input: params,
          output: exit.value.output,
          title: exit.value.title,
          metadata: { ...metadata, ...exit.value.metadata },
          time: { start: started, end: Date.now() }
        }
      })
    } else {
      const failure = Cause.failureOption(exit.cause)
      if (Option.isNone(failure)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
      yield* writePart(deps, state, message, {
        ...part,
        state: { status: "error", input: params, error: failure.value.message, metadata, time: { start: started, end: Date.now() } }
      })
    }
    yield* finishMessage(deps, message, { finish: "tool-calls" })
  })
