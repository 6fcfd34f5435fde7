import {
  type Agent,
  type AgentNotFound,
  type AssistantMessage,
  type FilePartSource,
  type FinishReason,
  type MessageError,
  type MessageID,
  type MessageWithParts,
  type ModelRef,
  type Part,
  type PartID,
  type PermissionRuleset,
  RejectedError,
  type SessionID,
  type SessionNotFound,
  type SessionStatus,
  type TokenUsage,
  type ToolPart,
  type UserMessage
} from "@agent/domain"
import type { ModelMessage } from "ai"
import * as path from "node:path"
import {
  Cause,
  Context,
  Data,
  Schema,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  FiberSet,
  Layer,
  Option,
  Stream
} from "effect"
import { AgentRegistry } from "../agent/AgentRegistry.js"
import * as SystemPrompt from "../context/SystemPrompt.js"
import { Compaction } from "../context/Compaction.js"
import { InstructionLoader } from "../context/InstructionLoader.js"
import { SkillRegistry } from "../context/SkillRegistry.js"
import { ConfigService } from "../config/ConfigService.js"
import * as Identifier from "../runtime/Identifier.js"
import { warnBackgroundFailure } from "../runtime/BackgroundFailure.js"
import * as Prompts from "../runtime/Prompts.js"
import * as Wildcard from "../runtime/Wildcard.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import * as ProviderOptions from "../llm/ProviderOptions.js"
import { INVALID_TOOL, type LLMEvent, LLMService, ProviderError, type ToolSpec } from "../llm/LLMService.js"
import { type LiveMessage, ModelMessageCache } from "../llm/MessageConversion.js"
import { type ModelNotConfigured, ProviderRegistry, type ResolvedModel } from "../llm/ProviderRegistry.js"
import * as Permission from "../permission/Permission.js"
import { PermissionPolicy } from "../permission/PermissionPolicy.js"
import { PermissionService } from "../permission/PermissionService.js"
import { SessionChanges } from "../snapshot/SessionChanges.js"
import { Snapshot } from "../snapshot/Snapshot.js"
import { stepTouch } from "../snapshot/StepTouch.js"
import { SessionStore } from "../store/SessionStore.js"
import { Mcp } from "../mcp/Mcp.js"
import { resourceTools } from "../mcp/McpTools.js"
import * as Tool from "../tool/Tool.js"
import * as ToolSlots from "../tool/ToolSlots.js"
import { ToolRegistry } from "../tool/ToolRegistry.js"
import { Truncation } from "../tool/Truncation.js"

// --- inputs and outcomes -----------------------------------------------------------------

export type PromptPartInput =
  | { readonly type: "text"; readonly text: string; readonly synthetic?: boolean }
  | {
    readonly type: "file"
    readonly mime: string
    readonly url: string
    readonly filename?: string
    /** `{type: "resource", uri, clientName}`: an MCP resource, read through its server and given to the model. */
    readonly source?: typeof FilePartSource.Type
  }
  | { readonly type: "agent"; readonly name: string }
  | {
    readonly type: "subtask"
    readonly prompt: string
    readonly description: string
    readonly agent: string
    readonly model?: ModelRef
    /** The command that asked for it. */
    readonly command?: string
  }

export interface PromptInput {
  readonly sessionID: SessionID
  readonly parts: ReadonlyArray<PromptPartInput>
  /** The agent for this message (default: the session's last, else the default agent). */
  readonly agent?: string
  readonly model?: ModelRef
  /** The model's variant for this message (default: the agent's `variant`, when the model has it). */
  readonly variant?: string
  /** Extra system text for this message. */
  readonly system?: string
  readonly messageID?: MessageID
  /** Store the message without running the model. */
  readonly noReply?: boolean
  /** Legacy per-message switches: `{tool: false}` hides a tool. */
  readonly tools?: Record<string, boolean>
  /** Answer every permission ask of this run with "once" (deny rules still apply). */
  readonly autoApprove?: boolean
  /** A lower step limit for this run than the agent's own. */
  readonly maxSteps?: number
}

/** Why a run ended. */
export type StopReason =
  | "completed"
  | "rejected"
  | "error"
  | "aborted"
  | "steps"
  | "duration"
  | "stall"
  | "budget"

export interface RunOutcome {
  readonly reason: StopReason
  /** The last assistant message of the run, if the model was called. */
  readonly message?: MessageWithParts
  /** What went wrong, for `error` and the limits. */
  readonly error?: MessageError
  readonly usage: { readonly cost: number; readonly tokens: number; readonly steps: number }
}

/** How a run ended, before the usage and last message are attached. */
type Ending = Pick<RunOutcome, "reason" | "error">

export type LoopError = SessionNotFound | AgentNotFound | ModelNotConfigured

export interface SessionLoopShape {
  /** Adds a user message and runs the loop until the model is done (joins a run in progress). */
  readonly prompt: (input: PromptInput) => Effect.Effect<RunOutcome, LoopError>
  /** Continues a session whose last run was interrupted (crash or abort). */
  readonly resume: (sessionID: SessionID) => Effect.Effect<RunOutcome, LoopError>
  /** Stops the session's run: tools are cancelled, their parts marked interrupted. */
  readonly abort: (sessionID: SessionID) => Effect.Effect<void>
  /** A short prose account of what the session did, by the hidden summary agent. */
  readonly summarize: (sessionID: SessionID) => Effect.Effect<string, LoopError | ProviderError>
  /** Summarizes the session now (after the run in progress, if any). */
  readonly compact: (sessionID: SessionID) => Effect.Effect<RunOutcome, LoopError>
  readonly status: (sessionID: SessionID) => Effect.Effect<SessionStatus>
  /**
   * The rules the session's next prompt (with `agent`, else the agent it would run) is decided by,
   * the enterprise policy's last: what a server checks before it reads a file for a prompt.
   */
  readonly rules: (input: { readonly sessionID: SessionID; readonly agent?: string }) => Effect.Effect<
    PermissionRuleset,
    SessionNotFound | AgentNotFound
  >
  readonly statuses: () => Effect.Effect<ReadonlyMap<SessionID, SessionStatus>>
}

interface RunOptions {
  readonly autoApprove: boolean
  readonly maxSteps?: number | undefined
  /** Summarize the session instead of running the model on it. */
  readonly compactOnly?: boolean
}

/** Defaults that OpenCode uses; the retry cap is ours (OpenCode retries forever). */
const DEFAULT_RETRY_ATTEMPTS = 10
const DOOM_LOOP_THRESHOLD = 3
/** Tool calls of one step that run at once (`tool_concurrency`); the rest wait their turn, in order. Claude Code's default. */
export const DEFAULT_TOOL_CONCURRENCY = 10
const COMPACTION_NOT_ENOUGH =
  "The conversation no longer fits the model's context window, even right after summarizing it. Start a new session or use a model with a larger window."
const TITLE_MAX = 100

const emptyUsage = (): TokenUsage => ({ input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } })
const totalTokens = (usage: TokenUsage) =>
  usage.input + usage.output + usage.reasoning + usage.cache.read + usage.cache.write

/** The retry delay OpenCode uses: what the provider asked for, else 2 s doubling, capped at 30 s. */
export const retryDelay = (error: ProviderError, attempt: number, base = 2000): number => {
  if (error.retryAfterMs !== undefined) return Math.min(error.retryAfterMs, 2_147_483_647)
  return Math.min(base * 2 ** (attempt - 1), 30_000)
}

const errorOf = (name: string, message: string, extra: Record<string, unknown> = {}): MessageError => ({
  name,
  data: { message, ...extra }
})

/** The loop's own control flow: a step ended in a way that stops the run. */
class StopRun extends Data.TaggedError("StopRun")<{ readonly reason: StopReason; readonly error?: MessageError }> {}
const stopRun = (reason: StopReason, error: MessageError) => new StopRun({ reason, error })

interface Runner {
  readonly fiber: Fiber.RuntimeFiber<RunOutcome, LoopError>
  readonly options: RunOptions
  /** User messages sent while the run is going; taken in at the start of the next step. */
  readonly incoming: Array<LiveMessage>
  /** Set before the runner is interrupted, so cleanup can say why. */
  stopReason: StopReason | undefined
  stopError: MessageError | undefined
}

export class SessionLoop extends Context.Tag("@agent/core/SessionLoop")<SessionLoop, SessionLoopShape>() {
  static readonly layer: Layer.Layer<
    SessionLoop,
    never,
    | SessionStore
    | Bus
    | AgentRegistry
    | ProviderRegistry
    | LLMService
    | ToolRegistry
    | PermissionService
    | PermissionPolicy
    | Truncation
    | InstructionLoader
    | SkillRegistry
    | Mcp
    | Compaction
    | ConfigService
    | Instance
    | Snapshot
    | SessionChanges
  > = Layer.scoped(SessionLoop, make())
}

function make() {
  return Effect.gen(function*() {
    const store = yield* SessionStore
    const bus = yield* Bus
    const agents = yield* AgentRegistry
    const providers = yield* ProviderRegistry
    const llm = yield* LLMService
    const registry = yield* ToolRegistry
    const permissions = yield* PermissionService
    const policy = yield* PermissionPolicy
    const truncation = yield* Truncation
    const instructions = yield* InstructionLoader
    const compaction = yield* Compaction
    const skills = yield* SkillRegistry
    const mcp = yield* Mcp
    const mcpResourceTools = resourceTools(mcp)
    const config = yield* (yield* ConfigService).get()
    const instance = yield* Instance
    const snapshots = yield* Snapshot
    const sessionChanges = yield* SessionChanges
    const layerScope = yield* Effect.scope
    const background = yield* FiberSet.make()

    const runners = new Map<SessionID, Runner>()
    const statuses = new Map<SessionID, SessionStatus>()
    const retryAttempts = config.retry?.attempts ?? DEFAULT_RETRY_ATTEMPTS
    const toolConcurrency = config.tool_concurrency ?? DEFAULT_TOOL_CONCURRENCY
    const continueOnDeny = config.experimental?.continue_loop_on_deny === true

    const setStatus = (sessionID: SessionID, status: SessionStatus) =>
      Effect.gen(function*() {
        if (status.type === "idle") statuses.delete(sessionID)
        else statuses.set(sessionID, status)
        yield* sessionChanges.setRunning(sessionID, status.type !== "idle")
        yield* bus.publish({ type: "session.status", properties: { sessionID, status } })
        if (status.type === "idle") yield* bus.publish({ type: "session.idle", properties: { sessionID } })
      })

    // --- user messages -----------------------------------------------------------------

    /**
     * The content of an attached MCP resource as parts the model reads: its text in a
     * synthetic text part, binary content as a file. A resource that cannot be read becomes a
     * note saying why, so the message is kept and the model can tell the user.
     */
    const resourceParts = (source: typeof FilePartSource.Type, url: string) =>
      Effect.gen(function*() {
        const uri = source.uri ?? url
        yield* mcp.ready()
        let server = source.clientName
        if (server === undefined) {
          const listed = yield* mcp.resources().pipe(Effect.orElseSucceed(() => []))
          server = listed.find((resource) => resource.uri === uri)?.server
        }
        const read = server === undefined
          ? Effect.fail(`no connected MCP server lists it; name the server in the attachment's source.clientName`)
          : mcp.readResource(server, uri).pipe(Effect.mapError((error) => error.message))
        const outcome = yield* Effect.either(read)
        // One pass, so braces inside the resource's own text stay as they are.
        const fill = (name: string, values: Record<string, string>) =>
          Prompts.read(name).replace(/\{(\w+)\}/g, (placeholder, key: string) => values[key] ?? placeholder)
        if (outcome._tag === "Left") {
          return [{
            type: "text" as const,
            synthetic: true,
            text: fill("session/mcp-resource-failed.txt", { uri, server: server ?? "(unknown)", error: outcome.left })
          }]
        }
        const texts: Array<string> = []
        const files: Array<Omit<Extract<Part, { type: "file" }>, "id" | "sessionID" | "messageID">> = []
        for (const content of outcome.right) {
          if (content.text !== undefined) texts.push(content.text)
          else if (content.blob !== undefined) {
            const mime = content.mimeType ?? "application/octet-stream"
            // Text sent base64-encoded is still text.
            if (mime.startsWith("text/")) {
              texts.push(Buffer.from(content.blob, "base64").toString("utf8"))
              continue
            }
            texts.push(`[binary content ${content.uri} (${mime}) attached]`)
            files.push({ type: "file", mime, url: `data:${mime};base64,${content.blob}`, filename: path.basename(content.uri) })
          }
        }
        return [
          {
            type: "text" as const,
            synthetic: true,
            text: fill("session/mcp-resource.txt", {
              uri,
              server: server!,
              content: texts.length > 0 ? texts.join("\n\n") : "(the resource is empty)"
            })
          },
          ...files
        ]
      })

    const resolveAgent = (name: string | undefined) =>
      name === undefined ? agents.defaultAgent().pipe(Effect.orDie) : agents.get(name)

    /** The last user message of the session (among its latest 20), whose agent and model carry on. */
    const previousUser = (sessionID: SessionID) =>
      Effect.map(store.messagePage(sessionID, { limit: 20 }), (page) =>
        page.items.find((message) => message.info.role === "user")?.info as UserMessage | undefined)

    /** Skill folders are readable without an external-directory question (built-in defaults, like OpenCode's). */
    const skillRules = Effect.map(skills.directories(), (dirs) =>
      dirs.map((dir) => ({
        permission: "external_directory",
        pattern: path.join(dir, "*"),
        action: "allow" as const,
        source: { layer: "default" as const, note: "skill directory" }
      })))

    const rules = Effect.fn("SessionLoop.rules")(function*(input: { readonly sessionID: SessionID; readonly agent?: string }) {
      const session = yield* store.get(input.sessionID)
      const agent = yield* resolveAgent(input.agent ?? (yield* previousUser(input.sessionID))?.agent ?? session.agent)
      return Permission.merge(Permission.forSession(agent.permission, session.permission, yield* skillRules), policy.rules)
    })

    const createUserMessage = Effect.fn("SessionLoop.createUserMessage")(function*(input: PromptInput) {
      const session = yield* store.get(input.sessionID)
      const previous = yield* previousUser(input.sessionID)
      const agent = yield* resolveAgent(input.agent ?? previous?.agent ?? session.agent)
      const modelRef = input.model ??
        agent.model ??
        previous?.model ??
        (session.model ? { providerID: session.model.providerID, modelID: session.model.id } : undefined) ??
        (yield* providers.defaultModel())
      // Fail early, before anything is stored, when the model cannot be used.
      const resolved = yield* providers.resolve(modelRef)
      const variant = input.variant ??
        (agent.variant !== undefined && ProviderOptions.hasVariant(resolved.variants, agent.variant) ? agent.variant : undefined)
      const info: UserMessage = {
        id: input.messageID ?? (Identifier.ascending("message") as MessageID),
        sessionID: input.sessionID,
        role: "user",
        time: { created: Date.now() },
        agent: agent.name,
        model: { providerID: modelRef.providerID, modelID: modelRef.modelID, ...(variant !== undefined ? { variant } : {}) },
        ...(input.system ? { system: input.system } : {}),
        ...(input.tools ? { tools: input.tools } : {})
      }
      yield* store.upsertMessage(info)
      const parts: Array<Part> = []
      // An @mention of a subagent runs it on the message: the loop picks the subtask up first.
      const text = input.parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : [])).join("\n")
      const mentioned: Array<PromptPartInput> = []
      for (const part of input.parts) {
        if (part.type !== "agent" || input.parts.some((other) => other.type === "subtask")) continue
        const target = yield* agents.get(part.name).pipe(Effect.option)
        if (Option.isSome(target) && target.value.mode !== "primary" && text.trim()) {
          mentioned.push({
            type: "subtask",
            prompt: text,
            description: text.trim().split(/\s+/).slice(0, 5).join(" "),
            agent: part.name
          })
        }
      }
      for (const part of [...input.parts, ...mentioned]) {
        const base = { id: Identifier.ascending("part") as PartID, sessionID: info.sessionID, messageID: info.id }
        const stored: Part =
          part.type === "text"
            ? { ...base, type: "text", text: part.text, ...(part.synthetic ? { synthetic: true } : {}) }
            : part.type === "file"
            ? {
              ...base,
              type: "file",
              mime: part.mime,
              url: part.url,
              ...(part.filename ? { filename: part.filename } : {}),
              ...(part.source ? { source: part.source } : {})
            }
            : part.type === "agent"
            ? { ...base, type: "agent", name: part.name }
            : {
              ...base,
              type: "subtask",
              prompt: part.prompt,
              description: part.description,
              agent: part.agent,
              ...(part.model ? { model: part.model } : {}),
              ...(part.command ? { command: part.command } : {})
            }
        yield* store.upsertPart(stored)
        parts.push(stored)
        if (part.type === "file" && part.source?.type === "resource") {
          for (const extra of yield* resourceParts(part.source, part.url)) {
            const added: Part = { ...extra, id: Identifier.ascending("part") as PartID, sessionID: info.sessionID, messageID: info.id }
            yield* store.upsertPart(added)
            parts.push(added)
          }
        }
      }
      return { info, parts } satisfies LiveMessage
    })

    // --- subagents ------------------------------------------------------------------------

    const subagentDepth = config.subagent_depth ?? 1

    /** The subagents `agent` may start: not primary, not hidden, not denied by its `task` rules. */
    const subagentsFor = (agent: Agent) =>
      Effect.map(agents.list(), (all) =>
        all.filter((candidate) =>
          candidate.mode !== "primary" && !candidate.hidden &&
          Permission.evaluate("task", candidate.name, agent.permission).action !== "deny"
        ))

    /** How many parents a session has. */
    const depthOf = (sessionID: SessionID): Effect.Effect<number> =>
      Effect.gen(function*() {
        let depth = 0
        let current = yield* store.get(sessionID).pipe(Effect.orDie)
        while (current.parentID) {
          depth++
          current = yield* store.get(current.parentID).pipe(Effect.orDie)
        }
        return depth
      })

    /**
     * The parent's denies as they hold in the parent (and rules `keep` names, in place). A deny
     * on one permission is carried whole (as OpenCode carries edit denies). A wildcard deny that
     * later rules partly undo (`"*": deny` then `read: allow`) would lock the child out of what
     * the parent may do, so it is carried as one deny per known permission that no later allow
     * or ask gives back.
     */
    const parentDenies = (
      rules: PermissionRuleset,
      permissions: ReadonlyArray<string>,
      keep: (rule: PermissionRuleset[number]) => boolean = () => false
    ): PermissionRuleset =>
      rules.flatMap((rule, index) => {
        if (keep(rule)) return [rule]
        if (rule.action !== "deny" || rule.source?.layer === "default") return []
        if (!/[*?]/.test(rule.permission)) return [rule]
        const undone = rules.slice(index + 1).filter((later) => later.action !== "deny")
        if (!undone.some((later) => Wildcard.match(later.permission, rule.permission))) return [rule]
        return permissions
          .filter((name) => Wildcard.match(name, rule.permission) && !undone.some((later) => Wildcard.match(name, later.permission)))
          .map((name) => ({ ...rule, permission: name }))
      })

    /**
     * The child session's rules: what the parent may not do, the child may not do either (its
     * agent's and its session's denies, and the parent session's external-directory answers);
     * todo and task are off unless the subagent's own config mentions them; no task at all
     * past the nesting limit.
     */
    const childRules = (parent: Agent, parentSession: PermissionRuleset, subagent: Agent, childDepth: number) =>
      Effect.gen(function*() {
        const tools = [...(yield* registry.all()), ...(yield* mcp.tools())]
        const permissions = [...new Set([...tools.map((tool) => Permission.permissionOfTool(tool.id)), "task", "external_directory"])]
        const own = (permission: string) =>
          subagent.permission.some((rule) => rule.permission === permission && rule.source?.layer !== "default")
        const carried = [
          ...parentDenies(parent.permission, permissions),
          ...parentDenies(parentSession, permissions, (rule) => rule.permission === "external_directory")
        ]
        const note = (text: string) => ({ layer: "session" as const, note: text })
        return [
          ...carried,
          ...(own("todowrite") ? [] : [{ permission: "todowrite", pattern: "*", action: "deny" as const, source: note("subagent default") }]),
          ...(own("task") && childDepth < subagentDepth
            ? []
            : [{ permission: "task", pattern: "*", action: "deny" as const, source: note(`subagent depth limit ${subagentDepth}`) }])
        ] satisfies PermissionRuleset
      })

    const subagentResult = (childID: SessionID, outcome: RunOutcome) => {
      const texts = (outcome.message?.parts ?? []).flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : []))
      return `<task id="${childID}" state="${outcome.reason}">\n<task_result>\n${texts.join("\n").trim()}\n</task_result>\n</task>`
    }

    /** Runs (or resumes) a subagent in a child session and returns its last answer. */
    const runSubagent = (
      params: { readonly description: string; readonly prompt: string; readonly subagent_type: string; readonly task_id?: string | undefined },
      context: Pick<Tool.ToolContext, "sessionID" | "messageID" | "agent" | "metadata">,
      /** `model`: the model a subtask part asked for (a command's), over the subagent's own. */
      options: { readonly ask: Tool.ToolContext["ask"] | undefined; readonly model?: ModelRef | undefined }
    ) =>
      Effect.gen(function*() {
        const fail = (detail: string) => new Tool.ToolExecutionError({ tool: "task", detail })
        const available = yield* subagentsFor(context.agent)
        const subagent = available.find((candidate) => candidate.name === params.subagent_type)
        if (!subagent) {
          return yield* fail(
            `Unknown subagent "${params.subagent_type}". Available: ${available.map((candidate) => candidate.name).join(", ") || "none"}`
          )
        }
        if (options.ask) yield* options.ask({ permission: "task", patterns: [subagent.name], always: [subagent.name] })
        const parentSession = yield* store.get(context.sessionID).pipe(Effect.orDie)
        const childDepth = (yield* depthOf(context.sessionID)) + 1
        if (childDepth > subagentDepth) return yield* fail(`Subagents cannot start further subagents here (subagent_depth is ${subagentDepth}).`)

        const resumed = params.task_id
          ? yield* store.get(params.task_id as SessionID).pipe(Effect.option)
          : Option.none()
        if (params.task_id && (Option.isNone(resumed) || resumed.value.parentID !== context.sessionID)) {
          return yield* fail(`No subagent session ${params.task_id} belongs to this session; leave task_id out to start a new one.`)
        }
        const child = Option.isSome(resumed)
          ? resumed.value
          : yield* store.create({
            parentID: context.sessionID,
            title: `${params.description} (@${subagent.name} subagent)`,
            agent: subagent.name,
            permission: yield* childRules(context.agent, parentSession.permission ?? [], subagent, childDepth)
          }).pipe(Effect.orDie)

        const parentMessage = yield* store.getMessage(context.sessionID, context.messageID).pipe(Effect.orDie)
        const parentModel = parentMessage.info.role === "assistant"
          ? { providerID: parentMessage.info.providerID, modelID: parentMessage.info.modelID }
          : undefined
        const model = options.model ?? subagent.model ?? parentModel

        // Live progress: the child's tool calls, as the parent's task part metadata.
        const progress = new Map<string, { id: string; tool: string; status: string; title?: string }>()
        const updates = yield* bus.subscribe({ types: ["message.part.updated"] })
        yield* updates.pipe(
          Stream.filter((event) => event.properties.part.sessionID === child.id && event.properties.part.type === "tool"),
          Stream.runForEach((event) => {
            const part = event.properties.part as ToolPart
            const title = part.state.status === "completed" || part.state.status === "running" ? part.state.title : undefined
            progress.set(part.id, { id: part.id, tool: part.tool, status: part.state.status, ...(title ? { title } : {}) })
            return context.metadata({ metadata: { sessionId: child.id, summary: [...progress.values()] } })
          }),
          Effect.catchAllCause((cause) => Effect.logError("subagent progress stopped", cause)),
          Effect.forkScoped
        )
        yield* context.metadata({ title: params.description, metadata: { sessionId: child.id, summary: [] } })

        const parentRunner = runners.get(context.sessionID)
        const outcome = yield* prompt({
          sessionID: child.id,
          parts: [{ type: "text", text: params.prompt }],
          agent: subagent.name,
          ...(model ? { model } : {}),
          autoApprove: parentRunner?.options.autoApprove === true
        }).pipe(
          Effect.onInterrupt(() => abort(child.id)),
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

    const taskTool: Tool.AnyTool = Tool.make({
      id: "task",
      description: Prompts.read("tool/task.txt"),
      parameters: Schema.Struct({
        description: Schema.String.annotations({ description: "A short (3-5 words) description of the task" }),
        prompt: Schema.String.annotations({ description: "The task for the agent to perform" }),
        subagent_type: Schema.String.annotations({ description: "The type of specialized agent to use for this task" }),
        task_id: Schema.optional(Schema.String).annotations({
          description: "Pass the id of an earlier task to continue that subagent session instead of starting a new one"
        }),
        command: Schema.optional(Schema.String).annotations({ description: "The command that triggered this task" })
      }),
      describe: (agent) =>
        Effect.map(subagentsFor(agent), (list) =>
          [
            Prompts.read("tool/task.txt"),
            "",
            "Available agents:",
            ...list.map((candidate) => `- ${candidate.name}: ${candidate.description ?? "(no description)"}`)
          ].join("\n")),
      execute: (params, context) => runSubagent(params, context, { ask: context.ask })
    })

    // --- the run -------------------------------------------------------------------------

    const run = (sessionID: SessionID, options: RunOptions) =>
      Effect.gen(function*() {
        const session = yield* store.get(sessionID)
        const history: Array<LiveMessage> = (yield* store.history(sessionID)).map((message) => ({
          info: message.info,
          parts: [...message.parts]
        }))
        const cache = new ModelMessageCache()
        const runStart = Date.now()
        const runUsage = { cost: 0, tokens: 0, steps: 0 }
        let lastActivity = Date.now()
        let waitingOnUser = 0
        let lastAssistant: LiveMessage | undefined
        const touch = () => void (lastActivity = Date.now())
        const runner = runners.get(sessionID)!
        // Snapshots of this run's steps (Snapshot.ts); the session's diff is refreshed when files changed.
        const stepFiles = snapshots.steps()
        let filesChanged = false
        if (options.autoApprove) {
          // Answer this session's asks with "once" for the whole run; deny rules still apply, and an
          // ask only a person may answer (the policy's own, or a command the rules cannot read) is left alone.
          const asked = yield* bus.subscribe({ types: ["permission.asked"] })
          yield* asked.pipe(
            Stream.filter((event) => event.properties.sessionID === sessionID && event.properties.requiresPerson === undefined),
            Stream.runForEach((event) => permissions.reply({ requestID: event.properties.id, reply: "once" }).pipe(Effect.ignore)),
            Effect.catchAllCause((cause) => Effect.logError("auto-approve stopped", cause)),
            Effect.forkScoped
          )
        }

        const guards = (agent: Agent) =>
          Effect.gen(function*() {
            const limits = agent.limits
            if (!limits?.duration && !limits?.stall) return yield* Effect.never
            for (;;) {
              yield* Effect.sleep(Duration.seconds(1))
              const now = Date.now()
              if (limits.duration && now - runStart >= limits.duration * 1000) {
                return stopRun("duration", errorOf("RunLimitError", `The run reached its time limit of ${limits.duration} s.`))
              }
              if (limits.stall && waitingOnUser === 0 && now - lastActivity >= limits.stall * 1000) {
                return stopRun("stall", errorOf("RunLimitError", `Nothing happened for ${limits.stall} s; the run was stopped.`))
              }
            }
          })

        const latestUser = () => {
          for (let index = history.length - 1; index >= 0; index--) {
            if (history[index]!.info.role === "user") return history[index] as LiveMessage & { info: UserMessage }
          }
          return undefined
        }

        const isFinished = (message: LiveMessage) =>
          message.info.role === "assistant" &&
          message.info.finish !== undefined &&
          message.info.finish !== "tool-calls" &&
          message.info.finish !== "unknown"

        /** The model's last reply answers the newest user message and asks for nothing more. */
        const done = () => {
          const last = history.at(-1)
          if (!last || last.info.role !== "assistant") return false
          return isFinished(last)
        }

        /** The newest finished step after the latest summary (steps before it were already summarized). */
        const lastFinishedAfterSummary = () => {
          for (let index = history.length - 1; index >= 0; index--) {
            const message = history[index]!
            if (message.info.role === "assistant" && message.info.summary) return undefined
            if (isFinished(message) || (message.info.role === "assistant" && message.info.finish === "tool-calls")) return message
          }
          return undefined
        }

        /** Tokens (4 characters each) the history gained after `step` was sent: its tool results and newer messages' text. */
        const addedSince = (step: LiveMessage) => {
          let chars = 0
          // From the newest message back to `step` (the history before it is not walked every step).
          for (let index = history.length - 1; index >= 0; index--) {
            const message = history[index]!
            for (const part of message.parts) {
              if (part.type === "tool" && part.state.status === "completed" && !part.state.time.compacted) chars += part.state.output.length
              else if (part.type === "tool" && part.state.status === "error") chars += part.state.error.length
              else if (message !== step && part.type === "text") chars += part.text.length
            }
            if (message === step) break
          }
          return Math.ceil(chars / 4)
        }

        /** A new, empty assistant message answering `user`: stored, and appended to the history. */
        const startAssistantMessage = (user: LiveMessage, agent: Agent, model: ResolvedModel) =>
          Effect.gen(function*() {
            const info: AssistantMessage = {
              id: Identifier.ascending("message") as MessageID,
              sessionID,
              role: "assistant",
              time: { created: Date.now() },
              parentID: user.info.id,
              providerID: model.info.providerID,
              modelID: model.info.modelID,
              agent: agent.name,
              mode: agent.name,
              path: { cwd: instance.directory, root: instance.worktree },
              cost: 0,
              tokens: emptyUsage(),
              ...(user.info.role === "user" && user.info.model.variant !== undefined ? { variant: user.info.model.variant } : {})
            }
            const message: LiveMessage = { info, parts: [] }
            history.push(message)
            lastAssistant = message
            yield* store.upsertMessage(info)
            return message
          })

        /** Subtask parts of the newest user message that no later task call has handled yet. */
        const pendingSubtask = (user: LiveMessage) => {
          // Most prompts have no subtask: skip the scan of everything after it.
          if (!user.parts.some((part) => part.type === "subtask")) return undefined
          const index = history.indexOf(user)
          const handled = new Set(
            history.slice(index + 1).flatMap((message) =>
              message.parts.flatMap((part) => part.type === "tool" && typeof part.metadata?.subtask === "string" ? [part.metadata.subtask] : [])
            )
          )
          return user.parts.find((part): part is Extract<Part, { type: "subtask" }> => part.type === "subtask" && !handled.has(part.id))
        }

        /** Runs a requested subtask as a task call of a new assistant message; the model then sees its result. */
        const runPendingSubtask = (
          subtask: Extract<Part, { type: "subtask" }>,
          user: LiveMessage & { info: UserMessage },
          agent: Agent,
          model: ResolvedModel
        ) =>
          Effect.gen(function*() {
            const message = yield* startAssistantMessage(user, agent, model)
            const info = message.info as AssistantMessage
            const input = { description: subtask.description, prompt: subtask.prompt, subagent_type: subtask.agent }
            const started = Date.now()
            let part: ToolPart = {
              id: Identifier.ascending("part") as PartID,
              sessionID,
              messageID: info.id,
              type: "tool",
              callID: `subtask_${subtask.id}`,
              tool: "task",
              state: { status: "running", input, time: { start: started } },
              metadata: { subtask: subtask.id }
            }
            yield* writePart(message, part)
            const exit = yield* Effect.exit(
              runSubagent(input, {
                sessionID,
                messageID: info.id,
                agent,
                metadata: (update) =>
                  Effect.suspend(() => {
                    if (part.state.status !== "running") return Effect.void
                    part = {
                      ...part,
                      state: {
                        ...part.state,
                        ...(update.title ? { title: update.title } : {}),
                        metadata: { ...part.state.metadata, ...update.metadata }
                      }
                    }
                    return writePart(message, part)
                  })
              }, { ask: undefined, model: subtask.model })
            )
            const metadata = part.state.status === "running" ? part.state.metadata ?? {} : {}
            if (Exit.isSuccess(exit)) {
              yield* writePart(message, {
                ...part,
                state: {
                  status: "completed",
                  input,
                  output: exit.value.output,
                  title: exit.value.title,
                  metadata: { ...metadata, ...exit.value.metadata },
                  time: { start: started, end: Date.now() }
                }
              })
            } else {
              const failure = Cause.failureOption(exit.cause)
              if (Option.isNone(failure)) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
              yield* writePart(message, {
                ...part,
                state: { status: "error", input, error: failure.value.message, metadata, time: { start: started, end: Date.now() } }
              })
            }
            yield* finishMessage(message, { finish: "tool-calls" })
          })

        const stepLimitOf = (agent: Agent) =>
          options.maxSteps === undefined ? agent.steps : Math.min(agent.steps ?? Infinity, options.maxSteps)

        let compactedWithoutStep = false
        /** Replaces the in-memory history by [tail, summary request, summary] (+ a nudge to go on). */
        const compactHistory = (input: { model: ResolvedModel; user: UserMessage; auto: boolean; overflow: boolean }) =>
          Effect.gen(function*() {
            const result = yield* compaction.compact({ sessionID, history, ...input }).pipe(
              Effect.catchAll((error) => stopRun("error", errorOf("CompactionError", `Summarizing the session failed: ${error.message}`)))
            )
            history.length = 0
            history.push(...result.tail, result.user, result.summary)
            compactedWithoutStep = true
            touch()
            if (input.auto) {
              const nudge = yield* createUserMessage({
                sessionID,
                parts: [{ type: "text", text: Prompts.read("session/continue.txt"), synthetic: true }],
                agent: input.user.agent,
                model: input.user.model,
                ...(input.user.system ? { system: input.user.system } : {}),
                ...(input.user.tools ? { tools: input.user.tools } : {})
              }).pipe(Effect.orDie)
              history.push(nudge)
            }
          })

        let step = 0
        const loop: Effect.Effect<Ending, LoopError | StopRun> = Effect.gen(function*() {
          if (options.compactOnly) {
            const user = latestUser()
            if (!user) return { reason: "completed" as const }
            yield* compactHistory({ model: yield* providers.resolve(user.info.model), user: user.info, auto: false, overflow: false })
            return { reason: "completed" as const }
          }
          for (;;) {
            for (const message of runner.incoming.splice(0)) {
              if (!history.some((existing) => existing.info.id === message.info.id)) history.push(message)
            }
            if (done()) return { reason: "completed" as const }
            const user = latestUser()
            if (!user) return { reason: "completed" as const }
            step++
            runUsage.steps = step
            const agent = yield* resolveAgent(user.info.agent)
            const model = yield* providers.resolve(user.info.model)
            if (step === 1 && !session.parentID && session.title.startsWith("New session - ")) {
              yield* FiberSet.run(background, generateTitle(sessionID, user, model))
            }
            // A subtask the user asked for (a subtask part or an @agent mention) runs first.
            const subtask = pendingSubtask(user)
            if (subtask) {
              yield* runPendingSubtask(subtask, user, agent, model)
              continue
            }
            // The last step filled the window: summarize before asking again. Only steps after
            // the latest summary count, and never twice without a real step in between.
            const lastStep = lastFinishedAfterSummary()
            if (compaction.auto && lastStep && compaction.isOverflow(lastStep.info as AssistantMessage, model.info, addedSince(lastStep))) {
              if (compactedWithoutStep) return yield* stopRun("error", errorOf("ContextOverflowError", COMPACTION_NOT_ENOUGH))
              yield* compactHistory({ model, user: user.info, auto: true, overflow: false })
              continue
            }
            const outcome = yield* processStep({ agent, model, user, step })
            if (outcome?.reason === "error" && outcome.error?.data.contextOverflow === true && compaction.auto) {
              if (compactedWithoutStep) return yield* stopRun("error", errorOf("ContextOverflowError", COMPACTION_NOT_ENOUGH))
              yield* compactHistory({ model, user: user.info, auto: true, overflow: true })
              continue
            }
            compactedWithoutStep = false
            if (outcome) return outcome
            const limits = agent.limits
            if (limits?.tokens && runUsage.tokens >= limits.tokens) {
              return yield* stopRun("budget", errorOf("RunLimitError", `The run used ${runUsage.tokens} tokens, over its budget of ${limits.tokens}.`))
            }
            if (limits?.cost && runUsage.cost >= limits.cost) {
              return yield* stopRun("budget", errorOf("RunLimitError", `The run cost $${runUsage.cost.toFixed(4)}, over its budget of $${limits.cost}.`))
            }
            const stepLimit = stepLimitOf(agent)
            if (stepLimit !== undefined && step >= stepLimit && !done()) {
              return yield* stopRun("steps", errorOf("RunLimitError", `The agent reached its limit of ${stepLimit} steps.`))
            }
          }
        })

        // --- one step --------------------------------------------------------------------

        const processStep = (input: { agent: Agent; model: ResolvedModel; user: LiveMessage & { info: UserMessage }; step: number }) =>
          Effect.gen(function*() {
            const { agent, model, user } = input
            // The session's rules come last, but cannot loosen a deny of the user's config.
            const ruleset = Permission.forSession(agent.permission, session.permission, yield* skillRules)
            // What the model is offered heeds the enterprise policy too (every ask adds it last).
            const offerRules = Permission.merge(ruleset, policy.rules)
            const disabledTools = Object.entries(user.info.tools ?? {}).filter(([, on]) => !on).map(([id]) => id)
            const registered = yield* registry.forAgent({ agent, model: model.info, ruleset: offerRules, disabled: disabledTools })
            const offerTask = !Permission.disabled(["task"], offerRules).has("task") && !disabledTools.includes("task") &&
              (yield* subagentsFor(agent)).length > 0
            const visibleSkills = yield* skills.forAgent(agent)
            // MCP servers get a short grace period on the first step; later ones join on later steps.
            if (input.step === 1) yield* mcp.ready()
            const fromServers = yield* mcp.tools()
            const mcpTools = fromServers.length > 0 ? [...fromServers, ...mcpResourceTools] : []
            const hiddenMcp = Permission.disabled(mcpTools.map((tool) => tool.id), offerRules)
            const offered = [
              ...registered.filter((tool) => tool.id !== "skill" || visibleSkills.length > 0),
              ...mcpTools.filter((tool) => !hiddenMcp.has(tool.id) && !disabledTools.includes(tool.id))
            ]
            const tools = offerTask ? [...offered, taskTool] : offered
            const stepLimit = stepLimitOf(agent)
            const isLastStep = stepLimit !== undefined && input.step >= stepLimit
            const system = SystemPrompt.build({
              agent,
              model: model.info,
              instance,
              instructions: [
                ...(yield* instructions.system()),
                ...(yield* mcp.instructions()).map((entry) => `Instructions from the MCP server ${entry.server}:\n${entry.text}`),
                ...Option.toArray(Option.fromNullable(yield* skills.systemBlock(agent)))
              ],
              userSystem: user.info.system
            })
            const messages = requestMessages(agent, input.step, isLastStep)

            const message = yield* startAssistantMessage(user, agent, model)
            const info = message.info as AssistantMessage
            touch()

            let attempt = 0
            for (;;) {
              const result = yield* Effect.either(
                streamOnce({ agent, model, message, tools, ruleset, system, messages, autoApprove: options.autoApprove })
              )
              if (result._tag === "Right") return result.right
              const error = result.left
              if (!(error instanceof ProviderError)) return yield* Effect.fail(error)
              attempt++
              if (!error.retryable || attempt > retryAttempts) {
                const recorded = errorOf("APIError", error.message, {
                  statusCode: error.statusCode,
                  retryable: error.retryable,
                  attempts: attempt,
                  contextOverflow: error.contextOverflow
                })
                yield* finishMessage(message, { error: recorded })
                yield* bus.publish({ type: "session.error", properties: { sessionID, error: recorded } })
                return { reason: "error" as const, error: recorded }
              }
              // Throw away what the failed attempt produced and ask again. The step-start stays: a
              // retry is the same step, and a client that saw it start must not see a second start.
              const kept: Array<Part> = message.parts.filter((part) => part.type === "step-start").slice(0, 1)
              for (const part of message.parts) {
                if (!kept.includes(part)) yield* store.removePart(sessionID, info.id, part.id)
              }
              message.parts.splice(0, message.parts.length, ...kept)
              const delay = retryDelay(error, attempt, config.retry?.delay)
              yield* bus.publish({
                type: "session.retry",
                properties: {
                  sessionID,
                  attempt,
                  attempts: retryAttempts,
                  delay,
                  ...(error.statusCode !== undefined ? { statusCode: error.statusCode } : {}),
                  // The provider's words: the status is its own field, the model is known.
                  message: error.detail
                }
              })
              yield* setStatus(sessionID, { type: "retry", attempt, message: error.message, next: Date.now() + delay })
              yield* Effect.sleep(Duration.millis(delay))
              yield* setStatus(sessionID, { type: "busy" })
            }
          })

        /**
         * The history converted for the model up to its first unfinished message, in request
         * order, as the previous step left it. A step converts only what follows (walking a long
         * session message by message on every step made its steps slower the longer it ran);
         * the kept part is checked first: same messages, same summary position, and each user
         * message wrapped (or not) as before.
         */
        let converted:
          | {
            readonly summaryIndex: number
            readonly messages: Array<LiveMessage>
            readonly out: Array<ModelMessage>
            readonly users: Array<{ readonly index: number; readonly assistantBefore: boolean; readonly wrapped: boolean }>
            planBefore: boolean
            assistantBefore: boolean
          }
          | undefined

        /** History as the model sees it, with this step's reminders. */
        const requestMessages = (agent: Agent, stepNumber: number, isLastStep: boolean): Array<ModelMessage> => {
          let lastFinishedIndex = -1
          for (let index = history.length - 1; index >= 0; index--) {
            if (isFinished(history[index]!)) {
              lastFinishedIndex = index
              break
            }
          }
          // After a compaction the model sees the summary first, then the turns kept verbatim.
          let summaryIndex = -1
          for (let index = history.length - 1; index >= 1; index--) {
            const message = history[index]!
            if (message.info.role === "assistant" && message.info.summary && message.info.time.completed !== undefined) {
              summaryIndex = index
              break
            }
          }
          // Index order: [question, summary, older turns, newer turns], or simply history order.
          const at = (position: number): number =>
            summaryIndex < 0
              ? position
              : position === 0
              ? summaryIndex - 1
              : position === 1
              ? summaryIndex
              : position <= summaryIndex
              ? position - 2
              : position
          const wraps = (index: number, assistantBefore: boolean) => stepNumber > 1 && index > lastFinishedIndex && assistantBefore
          const kept = converted
          const keep = kept !== undefined && kept.summaryIndex === summaryIndex && kept.messages.length <= history.length &&
            kept.users.every((user) => wraps(user.index, user.assistantBefore) === user.wrapped) &&
            kept.messages.every((message, position) => history[at(position)] === message)
          const prefix = keep
            ? kept
            : {
              summaryIndex,
              messages: [],
              out: [],
              users: [],
              planBefore: false,
              assistantBefore: false
            }
          converted = prefix
          // The kept part grows up to the first unfinished message (where it stopped last time may be finished now).
          let extending = true
          const out: Array<ModelMessage> = prefix.out.slice()
          let planBefore = prefix.planBefore
          let assistantBefore = prefix.assistantBefore
          for (let position = prefix.messages.length; position < history.length; position++) {
            const index = at(position)
            const message = history[index]!
            const wrap = message.info.role === "user" && wraps(index, assistantBefore)
            const before = assistantBefore
            if (message.info.role === "assistant") {
              assistantBefore = true
              if (message.info.agent === "plan") planBefore = true
            }
            const messages = cache.convert(message, { wrapUserText: wrap })
            for (const each of messages) out.push(each)
            // A finished message converts the same way on later steps: it joins the kept part.
            if (extending && (message.info.role === "user" || message.info.time.completed !== undefined)) {
              prefix.messages.push(message)
              for (const each of messages) prefix.out.push(each)
              if (message.info.role === "user") prefix.users.push({ index, assistantBefore: before, wrapped: wrap })
              prefix.planBefore = planBefore
              prefix.assistantBefore = assistantBefore
            } else {
              extending = false
            }
          }
          const reminder = agent.name === "plan"
            ? Prompts.read("session/plan.txt")
            : agent.name === "build" && planBefore
            ? Prompts.read("session/build-switch.txt")
            : undefined
          if (reminder) {
            const lastUserIndex = out.findLastIndex((message) => message.role === "user")
            if (lastUserIndex >= 0) {
              const target = out[lastUserIndex] as Extract<ModelMessage, { role: "user" }>
              const content = typeof target.content === "string" ? [{ type: "text" as const, text: target.content }] : target.content
              out[lastUserIndex] = { ...target, content: [...content, { type: "text", text: reminder }] }
            }
          }
          if (isLastStep) out.push({ role: "assistant", content: Prompts.read("session/max-steps.txt") })
          return out
        }

        const writePart = (message: LiveMessage, part: Part) =>
          Effect.gen(function*() {
            const index = message.parts.findIndex((existing) => existing.id === part.id)
            if (index >= 0) message.parts[index] = part
            else message.parts.push(part)
            touch()
            yield* store.upsertPart(part)
          })

        const finishMessage = (
          message: LiveMessage,
          update: { readonly finish?: FinishReason; readonly error?: MessageError }
        ) =>
          Effect.gen(function*() {
            const info = message.info as AssistantMessage
            message.info = {
              ...info,
              time: { ...info.time, completed: Date.now() },
              ...(update.finish ? { finish: update.finish } : {}),
              ...(update.error ? { error: update.error } : {})
            }
            yield* store.upsertMessage(message.info)
          })

        /** The tool calls before this one in the current run, newest last, for doom-loop detection. */
        const previousToolCalls = (count: number): Array<ToolPart> => {
          const calls: Array<ToolPart> = []
          for (let index = history.length - 1; index >= 0 && calls.length < count; index--) {
            const message = history[index]!
            if (message.info.role === "user") break
            for (let p = message.parts.length - 1; p >= 0 && calls.length < count; p--) {
              const part = message.parts[p]!
              if (part.type === "tool" && part.state.status !== "pending") calls.push(part)
            }
          }
          return calls.reverse()
        }

        const streamOnce = (input: {
          agent: Agent
          model: ResolvedModel
          message: LiveMessage
          tools: ReadonlyArray<Tool.Tool>
          ruleset: ReturnType<typeof Permission.merge>
          system: ReadonlyArray<string>
          messages: Array<ModelMessage>
          autoApprove: boolean
        }) =>
          Effect.suspend(() => {
            // What the step leaves behind is cleaned up when it ends, in reverse order, as a scope
            // would do (a scope's finalizers each diff and restore the fiber's services).
            const atEnd: Array<(exit: Exit.Exit<unknown, unknown>) => Effect.Effect<void>> = []
            return Effect.gen(function*() {
              const { agent, message, model } = input
              const info = message.info as AssistantMessage
              // --- snapshot: the files before the step; after it (on success below, or here when
              // aborted), the patch of what changed. Registered first so it runs after the tools stop.
              const filesBefore = yield* stepFiles.begin()
              let filesRecorded = false
              const toolsById = new Map<string, Tool.Tool>(input.tools.map((tool) => [tool.id, tool]))
              const recordFiles = Effect.suspend(() => {
                filesRecorded = true
                return stepFiles.finish(filesBefore, stepTouch(message.parts, (id) => toolsById.get(id), instance.directory))
              }).pipe(Effect.tap((files) => Effect.sync(() => void (files?.patch && (filesChanged = true)))))
              const writePatch = (files: Effect.Effect.Success<typeof recordFiles>) =>
                files?.patch
                  ? writePart(message, { id: Identifier.ascending("part") as PartID, sessionID, messageID: info.id, type: "patch", ...files.patch, files: [...files.patch.files] })
                  : Effect.void
              atEnd.push((exit) => {
                if (filesRecorded || Exit.isSuccess(exit)) return Effect.void
                if (Option.isSome(Cause.failureOption(exit.cause))) return Effect.sync(() => stepFiles.failed(filesBefore))
                return recordFiles.pipe(
                  Effect.tap((files) =>
                    files
                      ? writePart(message, { id: Identifier.ascending("part") as PartID, sessionID, messageID: info.id, type: "snapshot", snapshot: files.snapshot })
                      : Effect.void),
                  Effect.flatMap(writePatch),
                  Effect.catchAllCause(warnBackgroundFailure("recording the aborted step's files failed"))
                )
              })
              // --- end snapshot
              // The step's running tool calls: interrupted if the step ends early.
              const toolFibers = new Set<Fiber.RuntimeFiber<void, never>>()
              // A call that died (its result could not be stored) fails the step once the others are done.
              const toolDeaths: Array<Cause.Cause<never>> = []
              // At most `toolConcurrency` of them run at once, the others in the order the model made them.
              const toolSlots = yield* ToolSlots.make(toolConcurrency)
              atEnd.push(() => toolFibers.size === 0 ? Effect.void : Fiber.interruptAll([...toolFibers]))
              const open = new Map<string, Part>()
              const toolParts = new Map<string, ToolPart>()
              let blocked = false
              let stepFinish: Extract<LLMEvent, { type: "finish-step" }> | undefined
              const abortController = new AbortController()
              // Tools still running when the step ends early are told to stop.
              atEnd.push((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => abortController.abort()))

              // A retried attempt keeps the step-start of the first one (the files before the step
              // are the same: a failed attempt leaves the snapshot where it was).
              if (!message.parts.some((part) => part.type === "step-start")) {
                yield* writePart(message, {
                  id: Identifier.ascending("part") as PartID,
                  sessionID,
                  messageID: info.id,
                  type: "step-start",
                  ...(filesBefore ? { snapshot: filesBefore.id } : {})
                })
              }

              // What the tools' own checks decide by: the rules every ask of this step evaluates.
              const toolRules = Permission.merge(input.ruleset, policy.rules)
              const ask = (
                request: Parameters<Tool.ToolContext["ask"]>[0],
                callID: string,
                ruleset: ReturnType<typeof Permission.merge> = input.ruleset
              ) =>
                Effect.suspend(() => {
                  waitingOnUser++
                  return permissions.ask({
                    sessionID,
                    permission: request.permission,
                    patterns: request.patterns,
                    always: request.always,
                    ...(request.opaque ? { opaque: request.opaque } : {}),
                    ...(request.sandboxed ? { sandboxed: true } : {}),
                    ...(request.requiresPerson ? { requiresPerson: request.requiresPerson } : {}),
                    ruleset,
                    tool: { messageID: info.id, callID },
                    ...(request.metadata ? { metadata: request.metadata } : {})
                  })
                }).pipe(
                  Effect.ensuring(Effect.sync(() => {
                    waitingOnUser--
                    touch()
                  }))
                )

              const runTool = (part: ToolPart, input_: unknown) =>
                Effect.gen(function*() {
                  const tool = input.tools.find((candidate) => candidate.id === part.tool) ??
                    (part.tool === INVALID_TOOL ? yield* registry.get(INVALID_TOOL) : undefined)
                  const started = part.state.status === "running" ? part.state.time.start : Date.now()
                  const fail = (error: string, metadata: Record<string, unknown> = {}) =>
                    writePart(message, {
                      ...part,
                      state: { status: "error", input: part.state.input, error, metadata, time: { start: started, end: Date.now() } }
                    })
                  if (!tool) {
                    const available = input.tools.map((candidate) => candidate.id).join(", ")
                    return yield* fail(`Unknown tool "${part.tool}". Available tools: ${available}`)
                  }
                  let live: Record<string, unknown> = {}
                  let title: string | undefined
                  const context: Tool.ToolContext = {
                    sessionID,
                    messageID: info.id,
                    callID: part.callID,
                    agent,
                    abort: abortController.signal,
                    ask: (request) => ask(request, part.callID),
                    rules: toolRules,
                    metadata: (update) =>
                      Effect.gen(function*() {
                        if (update.metadata) live = { ...live, ...update.metadata }
                        if (update.title) title = update.title
                        yield* writePart(message, {
                          ...part,
                          state: {
                            status: "running",
                            input: part.state.input,
                            time: { start: started },
                            metadata: live,
                            ...(title ? { title } : {})
                          }
                        })
                      })
                  }
                  const exit = yield* Effect.exit(
                    Tool.decodeInput(tool, input_).pipe(Effect.flatMap((params) => tool.execute(params, context)))
                  )
                  if (Exit.isSuccess(exit)) {
                    const result = exit.value
                    const cut = result.truncated
                      ? { content: result.output, truncated: true }
                      : yield* truncation.output(result.output, { canDelegate: input.tools.some((t) => t.id === "task") })
                    yield* writePart(message, {
                      ...part,
                      state: {
                        status: "completed",
                        input: part.state.input,
                        output: cut.content,
                        title: result.title,
                        metadata: {
                          ...live,
                          ...result.metadata,
                          ...(cut.truncated ? { truncated: true } : {}),
                          ...("outputPath" in cut && cut.outputPath ? { outputPath: cut.outputPath } : {})
                        },
                        time: { start: started, end: Date.now() },
                        ...(result.attachments
                          ? {
                            attachments: result.attachments.map((attachment) => ({
                              id: Identifier.ascending("part") as PartID,
                              sessionID,
                              messageID: info.id,
                              type: "file" as const,
                              mime: attachment.mime,
                              url: attachment.url,
                              ...(attachment.filename ? { filename: attachment.filename } : {})
                            }))
                          }
                          : {})
                      }
                    })
                    return
                  }
                  const failure = Cause.failureOption(exit.cause)
                  if (Option.isSome(failure)) {
                    const error = failure.value
                    if (error instanceof RejectedError && !continueOnDeny) blocked = true
                    return yield* fail(error.message, live)
                  }
                  if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
                  yield* Effect.logError(`tool ${part.tool} crashed`, exit.cause)
                  return yield* fail(`The ${part.tool} tool failed unexpectedly: ${Cause.pretty(exit.cause).split("\n")[0]}`, live)
                })

              const doomLoop = (part: ToolPart, toolInput: unknown) =>
                Effect.gen(function*() {
                  // This call and the ones right before it, all the same: the model is going in circles.
                  const recent = previousToolCalls(DOOM_LOOP_THRESHOLD - 1)
                  if (recent.length < DOOM_LOOP_THRESHOLD - 1) return true
                  const same = recent.every(
                    (call) => call.tool === part.tool && JSON.stringify(call.state.input) === JSON.stringify(toolInput)
                  )
                  if (!same) return true
                  // Asked against the agent's own rules: a session cannot silence the guard.
                  const asked = yield* Effect.either(
                    ask(
                      { permission: "doom_loop", patterns: [part.tool], always: [part.tool], metadata: { tool: part.tool, input: toolInput } },
                      part.callID,
                      agent.permission
                    )
                  )
                  if (asked._tag === "Right") return true
                  const error = asked.left
                  if (error instanceof RejectedError && !continueOnDeny) blocked = true
                  const now = Date.now()
                  yield* writePart(message, {
                    ...part,
                    state: { status: "error", input: part.state.input, error: error.message, time: { start: now, end: now } }
                  })
                  return false
                })

              const handle = (event: LLMEvent): Effect.Effect<void> =>
                Effect.gen(function*() {
                  switch (event.type) {
                    case "text-start":
                    case "reasoning-start": {
                      const part: Part = {
                        id: Identifier.ascending("part") as PartID,
                        sessionID,
                        messageID: info.id,
                        type: event.type === "text-start" ? "text" : "reasoning",
                        text: "",
                        time: { start: Date.now() }
                      }
                      open.set(`${event.type.split("-")[0]}:${event.id}`, part)
                      return yield* writePart(message, part)
                    }
                    case "text-delta":
                    case "reasoning-delta": {
                      const key = `${event.type.split("-")[0]}:${event.id}`
                      const part = open.get(key)
                      if (!part || (part.type !== "text" && part.type !== "reasoning")) return
                      const next = { ...part, text: part.text + event.text }
                      open.set(key, next)
                      const index = message.parts.findIndex((existing) => existing.id === part.id)
                      if (index >= 0) message.parts[index] = next
                      touch()
                      return yield* store.appendDelta({ sessionID, messageID: info.id, partID: part.id, field: "text", delta: event.text })
                    }
                    case "text-end":
                    case "reasoning-end": {
                      const key = `${event.type.split("-")[0]}:${event.id}`
                      const part = open.get(key)
                      if (!part || (part.type !== "text" && part.type !== "reasoning")) return
                      open.delete(key)
                      return yield* writePart(message, { ...part, time: { start: part.time?.start ?? Date.now(), end: Date.now() } })
                    }
                    case "tool-input-start": {
                      const part: ToolPart = {
                        id: Identifier.ascending("part") as PartID,
                        sessionID,
                        messageID: info.id,
                        type: "tool",
                        callID: event.id,
                        tool: event.toolName,
                        state: { status: "pending", input: {}, raw: "" }
                      }
                      toolParts.set(event.id, part)
                      return yield* writePart(message, part)
                    }
                    case "tool-input-delta": {
                      const part = toolParts.get(event.id)
                      if (part && part.state.status === "pending") {
                        const next: ToolPart = { ...part, state: { ...part.state, raw: part.state.raw + event.delta } }
                        toolParts.set(event.id, next)
                        const index = message.parts.findIndex((existing) => existing.id === part.id)
                        if (index >= 0) message.parts[index] = next
                        touch()
                      }
                      return
                    }
                    case "tool-call": {
                      // Calls the model got wrong go to the invalid tool, which tells it why.
                      const routed = event.invalid !== undefined
                        ? { toolName: INVALID_TOOL, input: { tool: event.toolName, error: event.invalid } }
                        : { toolName: event.toolName, input: event.input }
                      const toolInput = typeof routed.input === "object" && routed.input !== null ? routed.input as Record<string, unknown> : {}
                      const existing = toolParts.get(event.toolCallId)
                      const running: ToolPart = {
                        id: existing?.id ?? (Identifier.ascending("part") as PartID),
                        sessionID,
                        messageID: info.id,
                        type: "tool",
                        callID: event.toolCallId,
                        tool: routed.toolName,
                        state: { status: "running", input: toolInput, time: { start: Date.now() } }
                      }
                      if (!(yield* doomLoop(running, toolInput))) return
                      toolParts.set(event.toolCallId, running)
                      yield* writePart(message, running)
                      // A queued call's time starts when it gets its slot.
                      const fiber = yield* Effect.forkDaemon(toolSlots.run(
                        Effect.suspend(() => runTool({ ...running, state: { status: "running", input: toolInput, time: { start: Date.now() } } }, routed.input))
                      ))
                      toolFibers.add(fiber)
                      fiber.addObserver((exit) => {
                        toolFibers.delete(fiber)
                        if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) toolDeaths.push(exit.cause)
                      })
                      return
                    }
                    case "finish-step": {
                      // Recorded now, written once the step's tool calls are done (step-finish closes the step).
                      stepFinish = event
                      message.info = { ...(message.info as AssistantMessage), finish: event.finishReason, tokens: event.usage, cost: event.cost }
                      return
                    }
                  }
                })

              // Most tools describe themselves with a fixed text; only the others need an effect.
              const specs: Array<ToolSpec> = []
              for (const tool of input.tools) {
                specs.push({
                  id: tool.id,
                  description: tool.describe ? yield* tool.describe(agent) : tool.description,
                  parameters: Tool.jsonSchemaOf(tool)
                })
              }
              yield* llm.call({
                model,
                system: input.system,
                messages: input.messages,
                tools: specs,
                abortSignal: abortController.signal,
                options: ProviderOptions.callOptions({ model, agent, variant: (input.message.info as AssistantMessage).variant }),
                ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
                ...(agent.topP !== undefined ? { topP: agent.topP } : {})
              }, handle)
              // Every call the model made finishes (or fails) before the step ends.
              while (toolFibers.size > 0) yield* Fiber.await(toolFibers.values().next().value!)
              if (toolDeaths.length > 0) return yield* Effect.failCause(toolDeaths[0]!)
              const filesAfter = yield* recordFiles
              if (stepFinish) {
                const { cost, finishReason, usage } = stepFinish
                runUsage.cost += cost
                runUsage.tokens += totalTokens(usage)
                yield* writePart(message, {
                  id: Identifier.ascending("part") as PartID,
                  sessionID,
                  messageID: info.id,
                  type: "step-finish",
                  reason: finishReason,
                  ...(filesAfter ? { snapshot: filesAfter.snapshot } : {}),
                  cost,
                  tokens: usage
                })
                yield* store.addUsage(sessionID, { cost, tokens: usage })
              } else if (filesAfter) {
                yield* writePart(message, { id: Identifier.ascending("part") as PartID, sessionID, messageID: info.id, type: "snapshot", snapshot: filesAfter.snapshot })
              }
              yield* writePatch(filesAfter)
              // A stream that ended without a finish reason is over unless it asked for tools.
              const finish = (message.info as AssistantMessage).finish ?? (toolParts.size > 0 ? "tool-calls" : "other")
              yield* finishMessage(message, { finish })
              if (blocked) return { reason: "rejected" as const }
              return undefined
            }).pipe(Effect.onExit((exit) => Effect.forEach(atEnd.reverse(), (end) => end(exit), { discard: true })))
          })

        /** Marks everything left unfinished by an abort or a limit, then completes the message. */
        const cleanUp = (reason: StopReason, error: MessageError | undefined) =>
          Effect.gen(function*() {
            yield* store.flush()
            const message = lastAssistant
            if (!message || message.info.role !== "assistant" || message.info.time.completed !== undefined) return
            const now = Date.now()
            for (const part of [...message.parts]) {
              if (part.type === "tool" && (part.state.status === "pending" || part.state.status === "running")) {
                const metadata = part.state.status === "running" ? part.state.metadata ?? {} : {}
                yield* writePart(message, {
                  ...part,
                  state: {
                    status: "error",
                    input: part.state.input,
                    error: "Tool execution aborted",
                    metadata: { ...metadata, interrupted: true },
                    time: { start: part.state.status === "running" ? part.state.time.start : now, end: now }
                  }
                })
              }
              if ((part.type === "text" || part.type === "reasoning") && part.time?.end === undefined) {
                const latest = (yield* store.getMessage(sessionID, message.info.id).pipe(Effect.option)).pipe(
                  Option.flatMap((stored) => Option.fromNullable(stored.parts.find((candidate) => candidate.id === part.id))),
                  Option.getOrElse(() => part)
                )
                if (latest.type === "text" || latest.type === "reasoning") {
                  yield* writePart(message, { ...latest, time: { start: latest.time?.start ?? now, end: now } })
                }
              }
            }
            yield* finishMessage(message, {
              error: error ?? errorOf("MessageAbortedError", reason === "aborted" ? "The run was aborted." : `The run was stopped (${reason}).`)
            })
          })

        const outcome = yield* loop.pipe(
          Effect.raceFirst(
            Effect.flatMap(resolveAgent(latestUser()?.info.agent), guards).pipe(
              Effect.flatMap((stop) => Effect.fail(stop))
            )
          ),
          Effect.catchIf(
            (error): error is StopRun => error instanceof StopRun,
            (stop) =>
              cleanUp(stop.reason, stop.error).pipe(
                Effect.as<Ending>({ reason: stop.reason, ...(stop.error ? { error: stop.error } : {}) })
              )
          ),
          Effect.onInterrupt(() => cleanUp(runner.stopReason ?? "aborted", runner.stopError))
        )
        // Old tool outputs are cleared once the run is over, never in the middle of it.
        yield* compaction.prune(sessionID, history).pipe(Effect.catchAllCause(warnBackgroundFailure("pruning old tool output failed")))
        if (filesChanged) {
          yield* sessionChanges.summarize(sessionID).pipe(Effect.catchAllCause(warnBackgroundFailure("session diff failed")))
        }
        const last = lastAssistant
        return {
          ...outcome,
          usage: runUsage,
          ...(last ? { message: { info: last.info, parts: [...last.parts] } } : {})
        } satisfies RunOutcome
      })

    // --- runners ---------------------------------------------------------------------------

    /** Starts the session's run, or returns the one in progress. */
    const ensureRunning = (sessionID: SessionID, options: RunOptions) =>
      Effect.gen(function*() {
        const existing = runners.get(sessionID)
        if (existing) return existing
        const ready = yield* Deferred.make<void>()
        const fiber = yield* Effect.gen(function*() {
          yield* Deferred.await(ready)
          yield* setStatus(sessionID, { type: "busy" })
          return yield* Effect.scoped(run(sessionID, options))
        }).pipe(
          Effect.ensuring(
            Effect.suspend(() => {
              runners.delete(sessionID)
              return setStatus(sessionID, { type: "idle" })
            })
          ),
          Effect.forkIn(layerScope)
        )
        const runner: Runner = { fiber, options, incoming: [], stopReason: undefined, stopError: undefined }
        runners.set(sessionID, runner)
        yield* Deferred.succeed(ready, undefined)
        return runner
      })

    const awaitRun = (runner: Runner): Effect.Effect<RunOutcome, LoopError> =>
      Fiber.await(runner.fiber).pipe(
        Effect.flatMap((exit) =>
          Exit.isSuccess(exit)
            ? Effect.succeed(exit.value)
            : Exit.isInterrupted(exit)
            ? Effect.succeed<RunOutcome>({ reason: runner.stopReason ?? "aborted", usage: { cost: 0, tokens: 0, steps: 0 } })
            : Effect.failCause(exit.cause)
        )
      )

    const prompt = Effect.fn("SessionLoop.prompt")(function*(input: PromptInput) {
      // A new prompt ends a revert: the hidden messages are removed for good.
      if (!runners.has(input.sessionID)) yield* sessionChanges.cleanup(input.sessionID)
      const message = yield* createUserMessage(input)
      if (input.noReply) return { reason: "completed" as const, usage: { cost: 0, tokens: 0, steps: 0 } }
      const running = runners.get(input.sessionID)
      if (running) {
        // The run in progress picks the new message up at its next step; one run per session.
        running.incoming.push(message)
        return yield* awaitRun(running)
      }
      return yield* awaitRun(yield* ensureRunning(input.sessionID, { autoApprove: input.autoApprove === true, maxSteps: input.maxSteps }))
    })

    const resume = Effect.fn("SessionLoop.resume")(function*(sessionID: SessionID) {
      yield* store.get(sessionID)
      if (!runners.has(sessionID)) yield* sessionChanges.cleanup(sessionID)
      const running = runners.get(sessionID)
      return yield* awaitRun(running ?? (yield* ensureRunning(sessionID, { autoApprove: false })))
    })

    const summarize = Effect.fn("SessionLoop.summarize")(function*(sessionID: SessionID) {
      yield* store.get(sessionID)
      const messages = yield* store.history(sessionID)
      const lastUser = [...messages].reverse().find((message) => message.info.role === "user")?.info as UserMessage | undefined
      // Nothing asked yet: nothing to summarize, and no model call.
      if (!lastUser) return ""
      // The files the session (children included) changed, so the account of the changes is exact.
      const changed = yield* sessionChanges.diff(sessionID).pipe(Effect.orElseSucceed(() => []))
      const request = [
        Prompts.read("session/summary-request.txt"),
        ...(changed.length > 0
          ? ["", Prompts.read("session/summary-files.txt"), ...changed.map((diff) => `- ${diff.file} (${diff.status ?? "modified"}, +${diff.additions} -${diff.deletions})`)]
          : [])
      ].join("\n")
      const modelRef = lastUser.model
      const model = yield* providers.resolve(modelRef)
      const summary = yield* agents.get("summary").pipe(Effect.orDie)
      const cache = new ModelMessageCache()
      let text = ""
      yield* llm.stream({
        model,
        system: [summary.prompt ?? ""],
        options: summary.options,
        messages: [
          ...messages.flatMap((message) => cache.convert({ info: message.info, parts: [...message.parts] }, { wrapUserText: false })),
          { role: "user", content: request }
        ],
        tools: []
      }).pipe(Stream.runForEach((event) => Effect.sync(() => void (event.type === "text-delta" && (text += event.text)))))
      return text.trim()
    })

    const compact = Effect.fn("SessionLoop.compact")(function*(sessionID: SessionID) {
      yield* store.get(sessionID)
      if (!runners.has(sessionID)) yield* sessionChanges.cleanup(sessionID)
      const running = runners.get(sessionID)
      if (running) yield* Fiber.await(running.fiber)
      return yield* awaitRun(yield* ensureRunning(sessionID, { autoApprove: false, compactOnly: true }))
    })

    const abort = Effect.fn("SessionLoop.abort")(function*(sessionID: SessionID) {
      const runner = runners.get(sessionID)
      if (!runner) return
      runner.stopReason ??= "aborted"
      yield* Fiber.interrupt(runner.fiber)
    })

    // --- titles ----------------------------------------------------------------------------

    const generateTitle = (sessionID: SessionID, user: LiveMessage, sessionModel: ResolvedModel) =>
      Effect.gen(function*() {
        const text = user.parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : [])).join("\n").trim()
        if (!text) return
        const titleAgent = yield* agents.get("title").pipe(Effect.orDie)
        const smallRef = yield* providers.smallModel()
        const model = smallRef ? yield* providers.resolve(smallRef).pipe(Effect.orElseSucceed(() => sessionModel)) : sessionModel
        let answer = ""
        yield* llm.stream({
          model,
          system: [titleAgent.prompt ?? ""],
          messages: [{ role: "user", content: text.slice(0, 4000) }],
          tools: [],
          options: titleAgent.options,
          ...(titleAgent.temperature !== undefined ? { temperature: titleAgent.temperature } : {})
        }).pipe(
          Stream.runForEach((event) => Effect.sync(() => {
            if (event.type === "text-delta") answer += event.text
          }))
        )
        const title = cleanTitle(answer)
        if (!title) return
        const current = yield* store.get(sessionID)
        if (current.title.startsWith("New session - ")) yield* store.update(sessionID, { title })
      }).pipe(Effect.catchAllCause(warnBackgroundFailure("title generation failed")))

    yield* Effect.addFinalizer(() =>
      Effect.forEach([...runners.values()], (runner) => Fiber.interrupt(runner.fiber), { discard: true })
    )

    return {
      prompt,
      resume,
      abort,
      compact,
      summarize,
      status: (sessionID) => Effect.sync(() => statuses.get(sessionID) ?? { type: "idle" as const }),
      rules,
      statuses: () => Effect.sync(() => new Map(statuses))
    } satisfies SessionLoopShape
  })
}

/** First meaningful line of the title model's answer, without quotes or a "Title:" prefix. */
export const cleanTitle = (answer: string): string | undefined => {
  const line = answer
    .replace(/<think>[\s\S]*?<\/think>/g, "")
    .split("\n")
    .map((candidate) => candidate.trim())
    .find((candidate) => candidate.length > 0)
  if (!line) return undefined
  const cleaned = line.replace(/^title:\s*/i, "").replace(/^["'`*#\s]+|["'`*\s.]+$/g, "").trim()
  if (!cleaned) return undefined
  return cleaned.length > TITLE_MAX ? `${cleaned.slice(0, TITLE_MAX - 1)}…` : cleaned
}

