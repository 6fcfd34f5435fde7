// User messages: a prompt's parts stored as a user message (its agent and model decided, @mentions
// turned into subtasks, MCP resources read in), and the rules the session's next prompt runs by.
import type { FilePartSource, MessageID, Part, PartID, SessionID, UserMessage } from "@agent/domain"
import { Effect, Option } from "effect"
import * as path from "node:path"
import * as Identifier from "../runtime/Identifier.js"
import * as Prompts from "../runtime/Prompts.js"
import * as ProviderOptions from "../llm/ProviderOptions.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import { ModelNotConfigured } from "../llm/ProviderRegistry.js"
import * as Permission from "../permission/Permission.js"
import type { LoopDeps } from "./LoopDeps.js"
import type { PromptInput, PromptPartInput } from "./LoopTypes.js"

/** The last user message of the session (among its latest 20), whose agent and model carry on. */
export const previousUser = (deps: LoopDeps, sessionID: SessionID) =>
  Effect.map(deps.store.messagePage(sessionID, { limit: 20 }), (page) =>
    page.items.find((message) => message.info.role === "user")?.info as UserMessage | undefined)

/** The rules the session's next prompt (with `agent`, else the agent it would run) is decided by, the policy's last. */
export const rulesFor = (deps: LoopDeps, input: { readonly sessionID: SessionID; readonly agent?: string }) =>
  Effect.gen(function*() {
    const session = yield* deps.store.get(input.sessionID)
    const agent = yield* deps.resolveAgent(input.agent ?? (yield* previousUser(deps, input.sessionID))?.agent ?? session.agent)
    return Permission.merge(Permission.forSession(agent.permission, session.permission, yield* deps.skillRules), deps.policy.rules)
  })

// One pass, so braces inside the resource's own text stay as they are.
const fill = (name: string, values: Record<string, string>) =>
  Prompts.read(name).replace(/\{(\w+)\}/g, (placeholder, key: string) => values[key] ?? placeholder)

type NewPart = Extract<Part, { type: "text" | "file" }> extends infer P ? P extends unknown ? Omit<P, "id" | "sessionID" | "messageID"> : never : never

/**
 * The content of an attached MCP resource as parts the model reads: its text in a synthetic text
 * part, binary content as a file. A resource that cannot be read becomes a note saying why, so
 * the message is kept and the model can tell the user.
 */
const resourceParts = (deps: LoopDeps, source: typeof FilePartSource.Type, url: string) =>
  Effect.gen(function*() {
    const { mcp } = deps
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
    if (outcome._tag === "Left") {
      return [{
        type: "text" as const,
        synthetic: true,
        text: fill("session/mcp-resource-failed.txt", { uri, server: server ?? "(unknown)", error: outcome.left })
      }] satisfies Array<NewPart>
    }
    const texts: Array<string> = []
    const files: Array<NewPart> = []
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
    const content = texts.length > 0 ? texts.join("\n\n") : "(the resource is empty)"
    return [
      { type: "text" as const, synthetic: true, text: fill("session/mcp-resource.txt", { uri, server: server!, content }) },
      ...files
    ] satisfies Array<NewPart>
  })

/** An @mention of a subagent runs it on the message: the loop picks the subtask up first. */
const mentionedSubtasks = (deps: LoopDeps, parts: ReadonlyArray<PromptPartInput>) =>
  Effect.gen(function*() {
    const text = parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : [])).join("\n")
    const mentioned: Array<PromptPartInput> = []
    for (const part of parts) {
      if (part.type !== "agent" || parts.some((other) => other.type === "subtask")) continue
      const target = yield* deps.agents.get(part.name).pipe(Effect.option)
      if (Option.isSome(target) && target.value.mode !== "primary" && text.trim()) {
        mentioned.push({ type: "subtask", prompt: text, description: text.trim().split(/\s+/).slice(0, 5).join(" "), agent: part.name })
      }
    }
    return mentioned
  })

const storedPart = (part: PromptPartInput, base: { id: PartID; sessionID: SessionID; messageID: MessageID }): Part =>
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

/** Stores the prompt as a user message; fails early, before anything is stored, when its model cannot be used. */
export const createUserMessage = (deps: LoopDeps) =>
  Effect.fn("SessionLoop.createUserMessage")(function*(input: PromptInput) {
    const { store, providers } = deps
    const session = yield* store.get(input.sessionID)
    const previous = yield* previousUser(deps, input.sessionID)
    const agent = yield* deps.resolveAgent(input.agent ?? previous?.agent ?? session.agent)
    const modelRef = input.model ??
      agent.model ??
      previous?.model ??
      (session.model ? { providerID: session.model.providerID, modelID: session.model.id } : undefined) ??
      (yield* providers.defaultModel())
    const resolved = yield* providers.resolve(modelRef)
    if (input.variant !== undefined && !ProviderOptions.hasVariant(resolved.variants, input.variant)) {
      const known = Object.entries(resolved.variants ?? {}).filter(([, settings]) => settings.disabled !== true).map(([name]) => name)
      return yield* new ModelNotConfigured({
        model: `${modelRef.providerID}/${modelRef.modelID}`,
        detail: `it has no variant "${input.variant}" (${known.length > 0 ? `its variants: ${known.join(", ")}` : "it has no variants; add them under provider.<id>.models.<model>.variants"})`
      })
    }
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
    const newBase = () => ({ id: Identifier.ascending("part") as PartID, sessionID: info.sessionID, messageID: info.id })
    for (const part of [...input.parts, ...(yield* mentionedSubtasks(deps, input.parts))]) {
      const stored = storedPart(part, newBase())
      yield* store.upsertPart(stored)
      parts.push(stored)
      if (part.type === "file" && part.source?.type === "resource") {
        for (const extra of yield* resourceParts(deps, part.source, part.url)) {
          const added = { ...extra, ...newBase() } as Part
          yield* store.upsertPart(added)
          parts.push(added)
        }
      }
    }
    return { info, parts } satisfies LiveMessage
  })

export type CreateUserMessage = ReturnType<typeof createUserMessage>
