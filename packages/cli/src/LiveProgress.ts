// The live view of a run on a terminal (stdout is a TTY, default format): the assistant's
// text as it streams, a line per finished tool call, and below it a status line with a spinner,
// the current step and what the run is waiting for. Piped output never comes here.
import type { BusEvent, BusEventOf, SessionID, ToolPart } from "@agent/domain"
import { clip } from "./Format.js"

export interface LiveProgressOptions {
  /** The session whose run is shown (subagent sessions show as their task tool line). */
  readonly sessionID: SessionID
  readonly write: (text: string) => void
  /** Colors and line erasing by escape sequence; without, the status line is overwritten with spaces. */
  readonly ansi: boolean
  readonly columns: () => number
}

export interface LiveProgress {
  readonly event: (event: BusEvent) => void
  /** Shows the turn's status line until `stop`. */
  readonly start: () => void
  /** Clears the status line and writes what is pending, so a question can take the terminal. */
  readonly pause: () => void
  readonly resume: () => void
  /** Writes what is pending, ends the line and removes the status line. */
  readonly stop: () => void
  /** Whether this text (the final answer) was already shown as it streamed. */
  readonly shown: (text: string) => boolean
}

/** One frame per this many milliseconds at most: text arrives in batches, the spinner turns. */
const FRAME_MS = 80
const SPINNER_ANSI = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
const SPINNER_PLAIN = ["|", "/", "-", "\\"]

/** Whether the terminal on stdout can take escape sequences. */
export { ansiAllowed } from "./ColorConsole.js"

const toolLabel = (part: ToolPart) => {
  const state = part.state
  const title = state.status === "running" || state.status === "completed" ? state.title : undefined
  const description = typeof state.input.description === "string" ? state.input.description : undefined
  return `${part.tool}${title || description ? ` ${title || description}` : ""}`
}

/** The view's state: an explicit value the functions below read and change. */
interface View {
  readonly options: LiveProgressOptions
  readonly spinner: ReadonlyArray<string>
  /** Output that stays, not yet written. */
  pending: string
  /** Whether the output that stays (written and pending) ends at the start of a line. */
  atLineStart: boolean
  /** Width of the status line on screen; 0 when none is shown. */
  shownStatus: number
  active: boolean
  paused: boolean
  frame: number
  step: number
  thinking: boolean
  timer: ReturnType<typeof setInterval> | undefined
  /** The streamed text shown so far. */
  printed: string
  readonly assistantMessages: Set<string>
  /** Text parts being streamed: characters shown so far. */
  readonly texts: Map<string, number>
  readonly endedTexts: Set<string>
  readonly runningTools: Map<string, string>
  readonly finishedTools: Set<string>
  /** The provider call being waited out before it is asked again. */
  retrying: { readonly retry: BusEventOf<"session.retry">["properties"]; readonly until: number } | undefined
}

const paint = (view: View, code: string, text: string) => (view.options.ansi ? `\x1b[${code}m${text}\x1b[0m` : text)

const emit = (view: View, text: string) => {
  if (!text) return
  view.pending += text
  view.atLineStart = text.endsWith("\n")
}

const line = (view: View, text: string) => {
  if (!view.atLineStart) emit(view, "\n")
  emit(view, `${text}\n`)
}

const status = (view: View) => {
  const tools = [...view.runningTools.values()]
  const doing = view.retrying
    ? retryLine(view.retrying.retry, view.retrying.until - Date.now())
    : tools.length > 0
    ? `${tools[0]}${tools.length > 1 ? ` (+${tools.length - 1} more)` : ""}`
    : view.thinking
    ? "thinking"
    : "waiting for the model"
  const text = `${view.spinner[view.frame % view.spinner.length]} ${view.step > 0 ? `step ${view.step} · ` : ""}${doing}`
  return clip(text, Math.max(10, view.options.columns() - 1))
}

/** Writes everything in one call: erase the status line, the pending output, the status line again. */
const draw = (view: View) => {
  let chunk = ""
  if (view.shownStatus > 0) {
    chunk += view.options.ansi ? "\r\x1b[2K" : `\r${" ".repeat(view.shownStatus)}\r`
    view.shownStatus = 0
  }
  chunk += view.pending
  view.pending = ""
  if (view.active && !view.paused && view.atLineStart) {
    const text = status(view)
    chunk += paint(view, "2", text)
    view.shownStatus = text.length
  }
  if (chunk) view.options.write(chunk)
}

const showText = (view: View, partID: string, text: string) => {
  emit(view, text)
  view.printed += text
  view.texts.set(partID, (view.texts.get(partID) ?? 0) + text.length)
}

/** A part of the shown session changed: a step began, text ended, a tool ran or finished. */
const onPart = (view: View, part: BusEventOf<"message.part.updated">["properties"]["part"]) => {
  switch (part.type) {
    case "step-start":
      view.step++
      view.thinking = false
      return
    case "reasoning":
      view.thinking = part.time.end === undefined
      return
    case "text": {
      if (!view.assistantMessages.has(part.messageID) || part.synthetic || view.endedTexts.has(part.id)) return
      if (!view.texts.has(part.id)) view.texts.set(part.id, 0)
      if (part.time?.end === undefined) return
      // The end carries the whole text: show whatever the deltas did not.
      showText(view, part.id, part.text.slice(view.texts.get(part.id)))
      view.endedTexts.add(part.id)
      if (!view.atLineStart) {
        emit(view, "\n")
        view.printed += "\n"
      }
      return
    }
    case "tool": {
      const state = part.state
      if (state.status === "pending" || state.status === "running") {
        view.runningTools.set(part.id, toolLabel(part))
        return
      }
      view.runningTools.delete(part.id)
      if (view.finishedTools.has(part.id)) return
      view.finishedTools.add(part.id)
      if (state.status === "completed") line(view, `${paint(view, "32", "✓")} ${part.tool.padEnd(10)} ${state.title}`)
      else line(view, `${paint(view, "31", "✗")} ${part.tool.padEnd(10)} failed: ${state.error.split("\n")[0]}`)
      return
    }
    default:
      return
  }
}

const onEvent = (view: View, event: BusEvent) => {
  const { sessionID } = view.options
  if (event.type === "session.retry" && event.properties.sessionID === sessionID) {
    view.retrying = { retry: event.properties, until: Date.now() + event.properties.delay }
    return
  }
  if ((event.type === "message.part.delta" || event.type === "message.part.updated") && view.retrying) view.retrying = undefined
  switch (event.type) {
    case "message.updated": {
      const info = event.properties.info
      if (info.sessionID === sessionID && info.role === "assistant") view.assistantMessages.add(info.id)
      return
    }
    case "message.part.delta": {
      const delta = event.properties
      if (delta.sessionID !== sessionID || delta.field !== "text" || !view.texts.has(delta.partID) || view.endedTexts.has(delta.partID)) return
      view.thinking = false
      return showText(view, delta.partID, delta.delta)
    }
    case "message.part.updated":
      if (event.properties.part.sessionID === sessionID) onPart(view, event.properties.part)
      return
    default:
      return
  }
}

export const make = (options: LiveProgressOptions): LiveProgress => {
  const view: View = {
    options,
    spinner: options.ansi ? SPINNER_ANSI : SPINNER_PLAIN,
    pending: "",
    atLineStart: true,
    shownStatus: 0,
    active: false,
    paused: false,
    frame: 0,
    step: 0,
    thinking: false,
    timer: undefined,
    printed: "",
    assistantMessages: new Set(),
    texts: new Map(),
    endedTexts: new Set(),
    runningTools: new Map(),
    finishedTools: new Set(),
    retrying: undefined
  }
  return {
    event: (event) => onEvent(view, event),
    start: () => {
      view.active = true
      view.paused = false
      if (view.timer === undefined) {
        view.timer = setInterval(() => {
          view.frame++
          draw(view)
        }, FRAME_MS)
        view.timer.unref()
      }
      draw(view)
    },
    pause: () => {
      view.paused = true
      if (!view.atLineStart) emit(view, "\n")
      draw(view)
    },
    resume: () => {
      view.paused = false
    },
    stop: () => {
      view.active = false
      if (view.timer !== undefined) clearInterval(view.timer)
      view.timer = undefined
      if (!view.atLineStart) emit(view, "\n")
      draw(view)
    },
    shown: (text) => view.printed.includes(text)
  }
}

/** "retrying in 4 s: HTTP 500 model overloaded, attempt 3 of 10": a retry on stderr and on the status line. */
export const retryLine = (retry: BusEventOf<"session.retry">["properties"], remaining: number) => {
  const seconds = remaining < 1000 ? `${(Math.max(0, remaining) / 1000).toFixed(1)} s` : `${Math.round(remaining / 1000)} s`
  const cause = [retry.statusCode !== undefined ? `HTTP ${retry.statusCode}` : undefined, retry.message.split("\n")[0]]
    .filter((piece) => piece).join(" ")
  return `retrying in ${seconds}: ${cause}, attempt ${retry.attempt} of ${retry.attempts}`
}
