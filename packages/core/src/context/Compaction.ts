import type { AssistantMessage, Config, MessageID, Part, PartID, SessionID, ToolPart, UserMessage } from "@agent/domain"
import type { ModelMessage } from "ai"
import { Context, Effect, Layer, Stream } from "effect"
import { AgentRegistry } from "../agent/AgentRegistry.js"
import * as Identifier from "../runtime/Identifier.js"
import * as Prompts from "../runtime/Prompts.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import * as Telemetry from "../runtime/Telemetry.js"
import { ConfigService } from "../config/ConfigService.js"
import { InstructionLoader } from "./InstructionLoader.js"
import { type LiveMessage, ModelMessageCache } from "../llm/MessageConversion.js"
import { LLMService, type ProviderError } from "../llm/LLMService.js"
import { type ModelInfo, type ResolvedModel } from "../llm/ProviderRegistry.js"
import { SessionStore } from "../store/SessionStore.js"

/** OpenCode's output reserve: the model's output limit, at most 32 000 tokens. */
const OUTPUT_CAP = 32_000
const DEFAULT_TAIL_TURNS = 2
/** Prune keeps this many tokens of recent tool output untouched... */
const PRUNE_PROTECT = 40_000
/** ...and only prunes when at least this much can be freed. */
const PRUNE_MINIMUM = 20_000
const PRUNE_PROTECTED_TOOLS = new Set(["skill"])
/** Tool output shown to the compaction model is capped, so the summary request itself fits. */
const TOOL_OUTPUT_FOR_SUMMARY = 2_000

/** A rough token count: four characters a token. */
export const estimateTokens = (text: string) => Math.ceil(text.length / 4)

const estimateMessages = (messages: ReadonlyArray<ModelMessage>) => estimateTokens(JSON.stringify(messages))

export interface CompactionResult {
  readonly user: LiveMessage
  readonly summary: LiveMessage
  /** Kept verbatim, oldest first; they precede `user` in the store. */
  readonly tail: ReadonlyArray<LiveMessage>
  readonly tokensBefore: number
  readonly tokensAfter: number
}

export interface CompactionShape {
  /** Tokens a request may use before the context window (minus the output reserve) is full. */
  readonly usable: (model: ModelInfo) => number
  /**
   * Whether this finished step used so much of the window that the next request may not fit:
   * its tokens (OpenCode's check) plus `added`, an estimate of what the history gained since
   * (its tool results, newer messages), so a large tool output is summarized before a request
   * that would overflow is sent.
   */
  readonly isOverflow: (message: AssistantMessage, model: ModelInfo, added?: number) => boolean
  /** Whether automatic compaction is on (`compaction.auto`, default true). */
  readonly auto: boolean
  /**
   * Summarizes `history` (the model's current view) into a new summary message, keeping the
   * last user turns verbatim; writes both messages and announces `session.compacted`.
   */
  readonly compact: (input: {
    readonly sessionID: SessionID
    readonly history: ReadonlyArray<LiveMessage>
    readonly model: ResolvedModel
    readonly user: UserMessage
    readonly auto: boolean
    readonly overflow: boolean
  }) => Effect.Effect<CompactionResult, ProviderError>
  /**
   * Marks old tool outputs as cleared (in the store); returns how many parts were pruned and the
   * history with those parts replaced (the given history is left as it was).
   */
  readonly prune: (sessionID: SessionID, history: ReadonlyArray<LiveMessage>) => Effect.Effect<PruneResult>
}

export interface PruneResult {
  readonly pruned: number
  readonly history: ReadonlyArray<LiveMessage>
}

type CompactionConfig = NonNullable<Config["compaction"]>

/** Instruction files that read results attached (`metadata.loaded`): the model loses them with the parts. */
const loadedBy = (parts: ReadonlyArray<Part>) =>
  parts.flatMap((part) => {
    if (part.type !== "tool" || part.tool !== "read" || part.state.status !== "completed") return []
    const loaded = part.state.metadata.loaded
    return Array.isArray(loaded) ? loaded.filter((file): file is string => typeof file === "string") : []
  })

/** Tokens a request may use: the window minus the output reserve. */
export const usableTokens = (config: CompactionConfig, model: ModelInfo) => {
  const maxOut = Math.min(model.limit.output, OUTPUT_CAP) || OUTPUT_CAP
  const reserved = config.reserved ?? Math.min(20_000, maxOut)
  return model.limit.input
    ? Math.max(0, model.limit.input - reserved)
    : Math.max(0, model.limit.context - maxOut)
}

/** Messages with tool output capped and attachments dropped, for the summary request. */
const forSummary = (message: LiveMessage): LiveMessage => ({
  info: message.info,
  parts: message.parts.flatMap((part): Array<Part> => {
    if (part.type === "file") return []
    if (part.type !== "tool" || part.state.status !== "completed") return [part]
    const output = part.state.output
    if (output.length <= TOOL_OUTPUT_FOR_SUMMARY) return [part]
    const omitted = output.length - TOOL_OUTPUT_FOR_SUMMARY
    return [{
      ...part,
      state: {
        ...part.state,
        output: `${output.slice(0, TOOL_OUTPUT_FOR_SUMMARY)}\n[Tool output truncated for the summary: ${omitted} characters left out]`
      }
    }]
  })
})

/** User turns (a user message and everything after it up to the next one), oldest first. */
const turns = (history: ReadonlyArray<LiveMessage>) => {
  const result: Array<Array<LiveMessage>> = []
  for (const message of history) {
    if (message.info.role === "user" || result.length === 0) result.push([message])
    else result.at(-1)!.push(message)
  }
  return result
}

/**
 * The verbatim tail: the last turns that fit the budget. Shrunk rather than kept so large that
 * the next request is close to the limit again.
 */
const verbatimTail = (
  config: CompactionConfig,
  history: ReadonlyArray<LiveMessage>,
  window: number,
  convert: (messages: ReadonlyArray<LiveMessage>) => Array<ModelMessage>
) => {
  const all = turns(history)
  const budget = Math.min(
    config.preserve_recent_tokens ?? Math.min(8_000, Math.max(2_000, Math.floor(window * 0.25))),
    Math.floor(window / 2)
  )
  let keep = Math.min(config.tail_turns ?? DEFAULT_TAIL_TURNS, Math.max(0, all.length - 1))
  while (keep > 0 && estimateMessages(convert(all.slice(-keep).flat())) > budget) keep--
  return keep > 0 ? all.slice(-keep).flat() : []
}

/** The tool parts prune clears: beyond the newest PRUNE_PROTECT tokens of output, when at least PRUNE_MINIMUM can go. */
export const pruneCandidates = (history: ReadonlyArray<LiveMessage>): Array<ToolPart> => {
  let userTurns = 0
  let protectedTokens = 0
  const doomed: Array<ToolPart> = []
  let freed = 0
  scan: for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index]!
    if (message.info.role === "user") userTurns++
    if (userTurns < 2) continue
    if (message.info.role === "assistant" && message.info.summary) break
    for (let p = message.parts.length - 1; p >= 0; p--) {
      const part = message.parts[p]!
      if (part.type !== "tool" || part.state.status !== "completed") continue
      if (part.state.time.compacted) break scan
      if (PRUNE_PROTECTED_TOOLS.has(part.tool)) continue
      const tokens = estimateTokens(part.state.output)
      protectedTokens += tokens
      if (protectedTokens > PRUNE_PROTECT) {
        doomed.push(part)
        freed += tokens
      }
    }
  }
  return freed < PRUNE_MINIMUM ? [] : doomed
}

/** The history with the given parts replaced (by id); messages without one are kept as they are. */
const replaceParts = (history: ReadonlyArray<LiveMessage>, replaced: ReadonlyMap<string, Part>) =>
  history.map((message) =>
    message.parts.some((part) => replaced.has(part.id))
      ? { info: message.info, parts: message.parts.map((part) => replaced.get(part.id) ?? part) }
      : message
  )

/** The two messages a compaction writes: the user's compaction request and the (empty) summary answering it. */
const compactionMessages = (
  input: Parameters<CompactionShape["compact"]>[0],
  tail: ReadonlyArray<LiveMessage>,
  path: { readonly cwd: string; readonly root: string }
) => {
  const now = Date.now()
  const userInfo: UserMessage = {
    id: Identifier.ascending("message") as MessageID,
    sessionID: input.sessionID,
    role: "user",
    time: { created: now },
    agent: input.user.agent,
    model: input.user.model,
    // The run's settings live on its user messages: the newest one decides the next step's tools.
    ...(input.user.system ? { system: input.user.system } : {}),
    ...(input.user.tools ? { tools: input.user.tools } : {})
  }
  const compactionPart: Part = {
    id: Identifier.ascending("part") as PartID,
    sessionID: input.sessionID,
    messageID: userInfo.id,
    type: "compaction",
    auto: input.auto,
    ...(input.overflow ? { overflow: true } : {}),
    ...(tail[0] ? { tail_start_id: tail[0].info.id } : {})
  }
  const summaryInfo: AssistantMessage = {
    id: Identifier.ascending("message") as MessageID,
    sessionID: input.sessionID,
    role: "assistant",
    time: { created: now },
    parentID: userInfo.id,
    providerID: input.model.info.providerID,
    modelID: input.model.info.modelID,
    agent: "compaction",
    mode: "compaction",
    path,
    summary: true,
    cost: 0,
    tokens: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } }
  }
  return { now, userInfo, compactionPart, summaryInfo }
}

export class Compaction extends Context.Tag("@agent/core/Compaction")<Compaction, CompactionShape>() {
  static readonly layer: Layer.Layer<
    Compaction,
    never,
    ConfigService | LLMService | SessionStore | Bus | AgentRegistry | Instance | InstructionLoader
  > = Layer.effect(Compaction, make())
}

function make() {
  return Effect.gen(function*() {
    const config = (yield* (yield* ConfigService).get()).compaction ?? {}
    const llm = yield* LLMService
    const store = yield* SessionStore
    const bus = yield* Bus
    const telemetry = yield* Telemetry.recorder
    const agents = yield* AgentRegistry
    const instance = yield* Instance
    const instructions = yield* InstructionLoader

    const usable = (model: ModelInfo) => usableTokens(config, model)

    const isOverflow = (message: AssistantMessage, model: ModelInfo, added = 0) => {
      if (config.auto === false || model.limit.context === 0) return false
      const tokens = message.tokens
      const used = tokens.total ?? tokens.input + tokens.output + tokens.cache.read + tokens.cache.write
      return used + added >= usable(model)
    }

    /** The compaction agent's answer to `messages`: its text, finish reason, usage and cost. */
    const summarize = (model: ResolvedModel, messages: Array<ModelMessage>) =>
      Effect.gen(function*() {
        const agent = yield* agents.get("compaction").pipe(Effect.orDie)
        const answer = {
          text: "",
          finish: "stop" as NonNullable<AssistantMessage["finish"]>,
          usage: { input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } } as AssistantMessage["tokens"],
          cost: 0
        }
        yield* llm.stream({ model, system: [agent.prompt ?? ""], messages, tools: [], options: agent.options }).pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              if (event.type === "text-delta") answer.text += event.text
              if (event.type === "finish-step") {
                answer.finish = event.finishReason
                answer.usage = event.usage
                answer.cost = event.cost
              }
            })
          )
        )
        return answer
      })

    const compact: CompactionShape["compact"] = Effect.fn("Compaction.compact")(function*(input) {
      const cache = new ModelMessageCache()
      const convert = (messages: ReadonlyArray<LiveMessage>) =>
        messages.flatMap((message) => cache.convert(message, { wrapUserText: false }))
      const tokensBefore = estimateMessages(convert(input.history))
      const tail = verbatimTail(config, input.history, usable(input.model.info), convert)
      const summarized = input.history.slice(0, input.history.length - tail.length)

      const hadSummary = summarized.some((message) => message.info.role === "assistant" && message.info.summary === true)
      const request = [
        ...(hadSummary ? [Prompts.read("session/compaction-update.txt")] : []),
        Prompts.read("session/compaction-request.txt")
      ].join("\n\n")
      const { now, userInfo, compactionPart, summaryInfo } = compactionMessages(input, tail, {
        cwd: instance.directory,
        root: instance.worktree
      })
      const answer = yield* summarize(input.model, [...convert(summarized.map(forSummary)), { role: "user", content: request }])

      yield* store.upsertMessage(userInfo)
      yield* store.upsertPart(compactionPart)
      const summaryText: Part = {
        id: Identifier.ascending("part") as PartID,
        sessionID: input.sessionID,
        messageID: summaryInfo.id,
        type: "text",
        text: answer.text.trim(),
        time: { start: now, end: Date.now() }
      }
      const completed: AssistantMessage = {
        ...summaryInfo,
        time: { created: now, completed: Date.now() },
        finish: answer.finish,
        tokens: answer.usage,
        cost: answer.cost
      }
      yield* store.upsertMessage(completed)
      yield* store.upsertPart(summaryText)
      yield* store.addUsage(input.sessionID, { cost: answer.cost, tokens: answer.usage })

      const user: LiveMessage = { info: userInfo, parts: [compactionPart] }
      const summary: LiveMessage = { info: completed, parts: [summaryText] }
      // Package instructions that came with summarized reads are gone from the view: attach them again on the next read.
      yield* instructions.release({ scope: input.sessionID, files: loadedBy(summarized.flatMap((message) => message.parts)) })
      const tokensAfter = estimateMessages(convert([user, summary, ...tail]))
      yield* bus.publish({
        type: "session.compacted",
        properties: { sessionID: input.sessionID, tokensBefore, tokensAfter, auto: input.auto }
      })
      telemetry?.compaction(input.auto)
      return { user, summary, tail, tokensBefore, tokensAfter }
    })

    const prune: CompactionShape["prune"] = Effect.fn("Compaction.prune")(function*(sessionID, history) {
      if (config.prune === false) return { pruned: 0, history }
      const doomed = pruneCandidates(history)
      if (doomed.length === 0) return { pruned: 0, history }
      const now = Date.now()
      const cleared = new Map<string, Part>()
      for (const part of doomed) {
        if (part.state.status !== "completed") continue
        const next: ToolPart = { ...part, state: { ...part.state, time: { ...part.state.time, compacted: now } } }
        yield* store.upsertPart(next)
        cleared.set(part.id, next)
      }
      yield* instructions.release({ scope: sessionID, files: loadedBy(doomed) })
      return { pruned: doomed.length, history: replaceParts(history, cleared) }
    })

    return { usable, isOverflow, auto: config.auto !== false, compact, prune } satisfies CompactionShape
  })
}
