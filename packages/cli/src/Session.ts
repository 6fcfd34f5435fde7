// Module by module, so the bundle's chunk for this command holds only what it uses.
import { type FileChange, SessionChanges } from "@agent/core/snapshot/SessionChanges"
import { SessionStore } from "@agent/core/store/SessionStore"
import {
  type MessageWithParts,
  type Part,
  Session,
  SessionExport,
  type SessionID,
  MessageWithParts as MessageWithPartsSchema
} from "@agent/domain"
import { Console, Effect, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { UsageError } from "./ExitCode.js"
import { readStdin } from "./RunTerminal.js"
import { table } from "./Format.js"
import * as Layers from "./Layers.js"

type Format = "default" | "json"

const encodeSession = Schema.encodeSync(Session)
const encodeMessages = Schema.encodeSync(Schema.Array(MessageWithPartsSchema))
const encodeExport = Schema.encodeSync(SessionExport)

const pad = (n: number) => String(n).padStart(2, "0")
const dateTime = (ms: number) => {
  const d = new Date(ms)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`
}
const time = (ms: number) => {
  const d = new Date(ms)
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}
const count = (n: number) => n.toLocaleString("en-US")

export const list = (input: { readonly limit: number; readonly search: Option.Option<string>; readonly format: Format }) =>
  Effect.gen(function*() {
    if (input.limit < 1) return yield* new UsageError({ message: `--limit must be at least 1, got ${input.limit}` })
    const store = yield* SessionStore
    const page = yield* store.list({ limit: input.limit, ...(Option.isSome(input.search) ? { search: input.search.value } : {}) })
    if (input.format === "json") return yield* Console.log(JSON.stringify(page.items.map((info) => encodeSession(info)), null, 2))
    if (page.items.length === 0) {
      return yield* Console.error(Option.isSome(input.search) ? `no session title contains "${input.search.value}"` : "no sessions in this project yet")
    }
    const rows = page.items.map((info) => [info.id, dateTime(info.time.created), dateTime(info.time.updated), info.title])
    yield* Console.log(table([["ID", "CREATED", "UPDATED", "TITLE"], ...rows]))
    if (page.next) yield* Console.error(`(more sessions than --limit ${input.limit})`)
  }).pipe(Effect.provide(Layers.reading))

/** The agent and model a session ran with: its own settings, else those of its last messages. */
const agentAndModel = (info: Session, messages: ReadonlyArray<MessageWithParts>) => {
  const lastUser = messages.findLast((message) => message.info.role === "user")?.info
  const lastAssistant = messages.findLast((message) => message.info.role === "assistant")?.info
  const agent = info.agent ?? lastUser?.agent
  const model = info.model
    ? `${info.model.providerID}/${info.model.id}`
    : lastAssistant?.role === "assistant"
    ? `${lastAssistant.providerID}/${lastAssistant.modelID}`
    : lastUser?.role === "user"
    ? `${lastUser.model.providerID}/${lastUser.model.modelID}`
    : undefined
  return { agent, model }
}

const firstLine = (text: string) => text.split("\n")[0] ?? ""

/** One part as the user would read it; undefined for bookkeeping parts. */
const partText = (part: Part): string | undefined => {
  switch (part.type) {
    case "text":
      return part.synthetic || part.ignored ? undefined : part.text
    case "reasoning":
      return part.text.trim() ? `(thinking) ${part.text.trim()}` : undefined
    case "file":
      return `[file ${part.filename ?? part.source?.path ?? part.mime}]`
    case "tool": {
      const state = part.state
      switch (state.status) {
        case "completed":
          return `  ✓ ${part.tool} ${state.title}`
        case "error":
          return `  ✗ ${part.tool} ${firstLine(state.error)}`
        case "running":
          return `  … ${part.tool} ${state.title ?? ""} (did not finish)`.trimEnd()
        case "pending":
          return `  … ${part.tool} (did not start)`
      }
      return undefined
    }
    case "subtask":
      return `[subtask for ${part.agent}: ${part.description}]`
    case "agent":
      return `[@${part.name}]`
    case "retry":
      return `[retry ${part.attempt}: ${part.error.data.message}]`
    case "compaction":
      return `[conversation compacted${part.auto ? " automatically" : ""}]`
    default:
      return undefined
  }
}

const messageText = (message: MessageWithParts): string => {
  const info = message.info
  const header = info.role === "user"
    ? `── user · ${time(info.time.created)}`
    : `── assistant (${info.agent}, ${info.providerID}/${info.modelID}) · ${time(info.time.created)}`
  const body = message.parts.flatMap((part) => {
    const text = partText(part)
    return text === undefined ? [] : [text]
  })
  if (info.role === "assistant" && info.error) body.push(`error: ${info.error.data.message}`)
  return [header, ...body].join("\n")
}

const STATUS: Record<FileChange["status"], string> = { added: "A", deleted: "D", modified: "M" }

/** The files a session changed, one line each: status, line counts, path. */
const changeLines = (changes: ReadonlyArray<FileChange>, withChildren: boolean): Array<string> => {
  if (changes.length === 0) return ["changes   none"]
  const additions = changes.reduce((sum, change) => sum + change.additions, 0)
  const deletions = changes.reduce((sum, change) => sum + change.deletions, 0)
  const plus = changes.map((change) => (change.binary ? "binary" : `+${change.additions}`))
  const minus = changes.map((change) => (change.binary ? "" : `-${change.deletions}`))
  const plusWidth = Math.max(...plus.map((text) => text.length))
  const minusWidth = Math.max(...minus.map((text) => text.length))
  return [
    `changes   ${changes.length} file${changes.length === 1 ? "" : "s"}, +${additions} -${deletions}` +
    (withChildren ? "   (subagent sessions included)" : ""),
    ...changes.map((change, index) =>
      `          ${STATUS[change.status]}  ${plus[index]!.padStart(plusWidth)} ${minus[index]!.padStart(minusWidth)}  ${change.file}`
    )
  ]
}

export const show = (input: { readonly id: string; readonly diff: boolean; readonly format: Format }) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const info = yield* store.get(input.id as SessionID)
    const messages = yield* store.messages(info.id)
    const children = yield* store.children(info.id)
    const changes = yield* (yield* SessionChanges).changes(info.id, { patches: input.diff })
    const { agent, model } = agentAndModel(info, messages)
    if (input.format === "json") {
      return yield* Console.log(JSON.stringify(
        {
          session: encodeSession(info),
          agent,
          model,
          children: children.map((child) => encodeSession(child)),
          changes,
          messages: encodeMessages(messages)
        },
        null,
        2
      ))
    }
    const tokens = info.tokens
    const lines = [
      info.title,
      `id        ${info.id}`,
      ...(info.parentID ? [`parent    ${info.parentID}`] : []),
      `agent     ${agent ?? "-"}`,
      `model     ${model ?? "-"}`,
      `created   ${dateTime(info.time.created)}   updated ${dateTime(info.time.updated)}`,
      tokens
        ? `tokens    ${count(tokens.input)} in, ${count(tokens.output)} out, ${count(tokens.reasoning)} reasoning, ` +
          `${count(tokens.cache.read)} cache read, ${count(tokens.cache.write)} cache write`
        : "tokens    -",
      `cost      $${(info.cost ?? 0).toFixed(4)}${children.length > 0 ? "   (tokens and cost include subagent sessions)" : ""}`,
      ...children.map((child, index) => `${index === 0 ? "subagents" : "         "} ${child.id}  ${child.title}`),
      ...changeLines(changes, children.length > 0),
      ...(info.revert
        ? [`reverted  from ${info.revert.messageID}${info.revert.partID ? ` (part ${info.revert.partID})` : ""} on; \`agent session unrevert ${info.id}\` puts it back`]
        : [])
    ]
    yield* Console.log(lines.join("\n"))
    for (const message of messages) yield* Console.log(`\n${messageText(message)}`)
    if (!input.diff || changes.length === 0) return
    yield* Console.log("\n── changes")
    for (const change of changes) {
      yield* Console.log(change.patch?.trimEnd() ?? `(${change.file}: its content is no longer in the snapshot store)`)
    }
  }).pipe(Effect.provide(Layers.changes))

export const exportSession = (input: { readonly id: string; readonly file: Option.Option<string> }) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const exported = yield* store.exportSession(input.id as SessionID)
    const text = `${JSON.stringify(encodeExport(exported), null, 2)}\n`
    if (Option.isNone(input.file)) return yield* Effect.sync(() => process.stdout.write(text))
    const file = path.resolve(input.file.value)
    yield* Effect.try({
      try: () => fs.writeFileSync(file, text),
      catch: (error) => new UsageError({ message: `cannot write ${input.file.pipe(Option.getOrElse(() => ""))}: ${(error as Error).message}` })
    })
    yield* Console.error(`exported ${exported.info.id} to ${file}`)
  }).pipe(Effect.provide(Layers.reading))

const readExport = (file: string) =>
  Effect.gen(function*() {
    const name = file === "-" ? "stdin" : file
    // stdin is read as a stream: readFileSync(0) fails with EAGAIN on a non-blocking pipe.
    const text = file === "-" ? yield* readStdin(true) : yield* Effect.try({
      try: () => fs.readFileSync(path.resolve(file), "utf8"),
      catch: (error) =>
        new UsageError({
          message: (error as NodeJS.ErrnoException).code === "ENOENT" ? `no such file: ${file}` : `cannot read ${name}: ${(error as Error).message}`
        })
    })
    return yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) => new UsageError({ message: `${name} is not a session export: not JSON (${(error as Error).message})` })
    })
  })

const countTree = (node: SessionExport): { sessions: number; messages: number } =>
  (node.children ?? []).map(countTree).reduce(
    (sum, child) => ({ sessions: sum.sessions + child.sessions, messages: sum.messages + child.messages }),
    { sessions: 1, messages: node.messages.length }
  )

export const importSession = (input: { readonly file: string }) =>
  Effect.gen(function*() {
    const data = yield* readExport(input.file)
    const store = yield* SessionStore
    const saved = yield* store.importSession(data)
    const { messages, sessions } = countTree(yield* store.exportSession(saved.id))
    yield* Console.log(
      `imported ${saved.id} "${saved.title}" (${messages} messages${sessions > 1 ? `, ${sessions - 1} subagent sessions` : ""})`
    )
  }).pipe(Effect.provide(Layers.storage))

export const remove = (input: { readonly id: string }) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const info = yield* store.get(input.id as SessionID)
    const descendants = (id: SessionID): Effect.Effect<number> =>
      Effect.flatMap(store.children(id), (kids) =>
        Effect.map(Effect.forEach(kids, (kid) => descendants(kid.id)), (counts) => kids.length + counts.reduce((a, b) => a + b, 0)))
    const below = yield* descendants(info.id)
    yield* store.remove(info.id)
    yield* Console.log(`deleted ${info.id} "${info.title}"${below > 0 ? ` and ${below} subagent session${below === 1 ? "" : "s"}` : ""}`)
  }).pipe(Effect.provide(Layers.storage))
