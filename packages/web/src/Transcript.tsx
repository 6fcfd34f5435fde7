/**
 * A session's transcript as a virtual list of rows: the person's prompts, the model's text
 * (markdown, sanitized), its reasoning (collapsed), and a card per tool call.
 */
import type { Message, Part, ToolPart } from "@agent/domain"
import { useSignal } from "@preact/signals"
import { createContext } from "preact"
import { useContext, useMemo } from "preact/hooks"
import * as Format from "./Format.js"
import { renderMarkdown } from "./Markdown.js"
import type { MessageEntry } from "./ViewState.js"
import { VirtualList } from "./VirtualList.js"

export type Row =
  | { readonly key: string; readonly kind: "user"; readonly message: Message; readonly text: string }
  | { readonly key: string; readonly kind: "part"; readonly message: Message; readonly part: Part }
  | { readonly key: string; readonly kind: "error"; readonly message: Message; readonly text: string }

const SHOWN = new Set(["text", "reasoning", "tool", "file", "retry", "compaction", "subtask", "agent", "patch"])

/** The rows of a transcript, in order; a user's prompt is one row. */
export const transcriptRows = (messages: ReadonlyArray<MessageEntry>): ReadonlyArray<Row> => {
  const rows: Array<Row> = []
  for (const { info, parts } of messages) {
    if (info.role === "user") {
      const text = parts.filter((part) => part.type === "text" && !part.synthetic).map((part) => (part as { text: string }).text).join("\n")
      rows.push({ key: info.id, kind: "user", message: info, text })
      continue
    }
    for (const part of parts) {
      if (!SHOWN.has(part.type)) continue
      if (part.type === "text" && part.text === "") continue
      rows.push({ key: part.id, kind: "part", message: info, part })
    }
    if (info.error && info.error.name !== "MessageAbortedError") rows.push({ key: `${info.id}:error`, kind: "error", message: info, text: info.error.data.message })
  }
  return rows
}

/** Rendered texts, kept while the transcript is on screen: a row scrolled back into view is not parsed again. */
const MarkdownCache = createContext<Map<string, string> | undefined>(undefined)

const Markdown = (props: { readonly text: string }) => {
  const cache = useContext(MarkdownCache)
  const html = useMemo(() => {
    const known = cache?.get(props.text)
    if (known !== undefined) return known
    const rendered = renderMarkdown(props.text)
    if (cache && cache.size < 5000) cache.set(props.text, rendered)
    return rendered
  }, [props.text])
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />
}

/** Output longer than this is folded to its first lines. */
const FOLD_LINES = 16
const FOLD_CHARS = 2000

const Folded = (props: { readonly text: string; readonly label: string }) => {
  const open = useSignal(false)
  const lines = props.text.split("\n")
  const long = lines.length > FOLD_LINES || props.text.length > FOLD_CHARS
  const shown = long && !open.value ? lines.slice(0, FOLD_LINES).join("\n").slice(0, FOLD_CHARS) : props.text
  return (
    <div class="folded">
      <pre aria-label={props.label}>{shown}</pre>
      {long
        ? (
          <button type="button" class="ghost small" onClick={() => (open.value = !open.value)}>
            {open.value ? "Fold" : `Show all ${lines.length} lines`}
          </button>
        )
        : null}
    </div>
  )
}

const inputSummary = (part: ToolPart): string => {
  const input = part.state.input as Record<string, unknown>
  for (const key of ["command", "filePath", "path", "pattern", "url", "description"]) {
    if (typeof input[key] === "string") return input[key] as string
  }
  return ""
}

export const ToolCard = (props: { readonly part: ToolPart }) => {
  const { part } = props
  const state = part.state
  const title = ("title" in state && state.title) || inputSummary(part)
  const took = state.status === "completed" || state.status === "error" ? Format.duration(state.time.end - state.time.start) : undefined
  return (
    <article class={`tool-card ${state.status}`} data-testid="tool-card" data-tool={part.tool} data-status={state.status}>
      <header>
        <span class="tool-name">{part.tool}</span>
        <span class="tool-title">{title}</span>
        <span class={`badge ${state.status}`}>{state.status}</span>
        {took ? <span class="took">{took}</span> : null}
      </header>
      <details>
        <summary>Input</summary>
        <pre>{JSON.stringify(state.input, null, 2)}</pre>
      </details>
      {state.status === "completed" ? <Folded text={state.output} label="Output" /> : null}
      {state.status === "error" ? <pre class="error">{state.error}</pre> : null}
    </article>
  )
}

const PartView = (props: { readonly part: Part }) => {
  const { part } = props
  switch (part.type) {
    case "text":
      return <Markdown text={part.text} />
    case "reasoning":
      return (
        <details class="reasoning">
          <summary>Reasoning{part.time.end === undefined ? "…" : ""}</summary>
          <div class="reasoning-text">{part.text}</div>
        </details>
      )
    case "tool":
      return <ToolCard part={part} />
    case "file":
      return <p class="note">Attached {part.filename ?? part.url}</p>
    case "retry":
      return <p class="note warn">Retry {part.attempt}: {part.error.data.message}</p>
    case "compaction":
      return <p class="note">History compacted{part.auto ? " (automatically)" : ""}</p>
    case "subtask":
      return <p class="note">Subagent {part.agent}: {part.description}</p>
    case "agent":
      return <p class="note">@{part.name}</p>
    case "patch":
      return <p class="note">Changed {part.files.length} file{part.files.length === 1 ? "" : "s"}</p>
    default:
      return null
  }
}

export const Transcript = (props: {
  readonly messages: ReadonlyArray<MessageEntry>
  readonly onRevert?: (messageID: string) => void
  readonly revertedFrom?: string
}) => {
  const rows = useMemo(() => transcriptRows(props.messages), [props.messages])
  const cache = useMemo(() => new Map<string, string>(), [])
  return (
    <MarkdownCache.Provider value={cache}>
    <VirtualList
      items={rows}
      keyOf={(row) => row.key}
      follow
      renderVersion={`${props.revertedFrom ?? ""}:${props.onRevert ? 1 : 0}`}
      class="transcript"
      label="Transcript"
      render={(row) => {
        const hidden = props.revertedFrom !== undefined && row.message.id >= props.revertedFrom
        if (row.kind === "user") {
          return (
            <div class={`user-row${hidden ? " reverted" : ""}`} data-testid="user-message">
              <div class="user-text">{row.text}</div>
              {props.onRevert && !hidden
                ? (
                  <button type="button" class="ghost small" onClick={() => props.onRevert!(row.message.id)} title="Undo the file changes from this prompt on">
                    Revert to here
                  </button>
                )
                : null}
            </div>
          )
        }
        if (row.kind === "error") return <p class="error" role="alert">{row.text}</p>
        return <div class={`part ${row.part.type}${hidden ? " reverted" : ""}`} data-part={row.part.type}><PartView part={row.part} /></div>
      }}
    />
    </MarkdownCache.Provider>
  )
}
