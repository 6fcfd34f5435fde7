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

export const make = (options: LiveProgressOptions): LiveProgress => {
  const { ansi, sessionID } = options
  const paint = (code: string, text: string) => (ansi ? `\x1b[${code}m${text}\x1b[0m` : text)
  const spinner = ansi ? SPINNER_ANSI : SPINNER_PLAIN

  /** Output that stays, not yet written. */
  let pending = ""
  /** Whether the output that stays (written and pending) ends at the start of a line. */
  let atLineStart = true
  /** Width of the status line on screen; 0 when none is shown. */
  let shownStatus = 0
  let active = false
  let paused = false
  let frame = 0
  let step = 0
  let thinking = false
  let timer: ReturnType<typeof setInterval> | undefined
  let printed = ""
  const assistantMessages = new Set<string>()
  /** Text parts being streamed: characters shown so far. */
  const texts = new Map<string, number>()
  const endedTexts = new Set<string>()
  const runningTools = new Map<string, string>()
  const finishedTools = new Set<string>()
  /** The provider call being waited out before it is asked again. */
  let retrying: { readonly retry: BusEventOf<"session.retry">["properties"]; readonly until: number } | undefined

  const emit = (text: string) => {
    if (!text) return
    pending += text
    atLineStart = text.endsWith("\n")
  }
  const line = (text: string) => {
    if (!atLineStart) emit("\n")
    emit(`${text}\n`)
  }

  const status = () => {
    const tools = [...runningTools.values()]
    const doing = retrying
      ? retryLine(retrying.retry, retrying.until - Date.now())
      : tools.length > 0
      ? `${tools[0]}${tools.length > 1 ? ` (+${tools.length - 1} more)` : ""}`
      : thinking
      ? "thinking"
      : "waiting for the model"
    const text = `${spinner[frame % spinner.length]} ${step > 0 ? `step ${step} · ` : ""}${doing}`
    return clip(text, Math.max(10, options.columns() - 1))
  }

  /** Writes everything in one call: erase the status line, the pending output, the status line again. */
  const draw = () => {
    let chunk = ""
    if (shownStatus > 0) {
      chunk += ansi ? "\r\x1b[2K" : `\r${" ".repeat(shownStatus)}\r`
      shownStatus = 0
    }
    chunk += pending
    pending = ""
    if (active && !paused && atLineStart) {
      const text = status()
      chunk += paint("2", text)
      shownStatus = text.length
    }
    if (chunk) options.write(chunk)
  }

  const showText = (partID: string, text: string) => {
    emit(text)
    printed += text
    texts.set(partID, (texts.get(partID) ?? 0) + text.length)
  }

  const event = (event: BusEvent) => {
    if (event.type === "session.retry" && event.properties.sessionID === sessionID) {
      retrying = { retry: event.properties, until: Date.now() + event.properties.delay }
      return
    }
    if ((event.type === "message.part.delta" || event.type === "message.part.updated") && retrying) retrying = undefined
    switch (event.type) {
      case "message.updated": {
        const info = event.properties.info
        if (info.sessionID === sessionID && info.role === "assistant") assistantMessages.add(info.id)
        return
      }
      case "message.part.delta": {
        const delta = event.properties
        if (delta.sessionID !== sessionID || delta.field !== "text" || !texts.has(delta.partID) || endedTexts.has(delta.partID)) return
        thinking = false
        return showText(delta.partID, delta.delta)
      }
      case "message.part.updated": {
        const part = event.properties.part
        if (part.sessionID !== sessionID) return
        switch (part.type) {
          case "step-start":
            step++
            thinking = false
            return
          case "reasoning":
            thinking = part.time.end === undefined
            return
          case "text": {
            if (!assistantMessages.has(part.messageID) || part.synthetic || endedTexts.has(part.id)) return
            if (!texts.has(part.id)) texts.set(part.id, 0)
            if (part.time?.end === undefined) return
            // The end carries the whole text: show whatever the deltas did not.
            showText(part.id, part.text.slice(texts.get(part.id)))
            endedTexts.add(part.id)
            if (!atLineStart) {
              emit("\n")
              printed += "\n"
            }
            return
          }
          case "tool": {
            const state = part.state
            if (state.status === "pending" || state.status === "running") {
              runningTools.set(part.id, toolLabel(part))
              return
            }
            runningTools.delete(part.id)
            if (finishedTools.has(part.id)) return
            finishedTools.add(part.id)
            if (state.status === "completed") line(`${paint("32", "✓")} ${part.tool.padEnd(10)} ${state.title}`)
            else line(`${paint("31", "✗")} ${part.tool.padEnd(10)} failed: ${state.error.split("\n")[0]}`)
            return
          }
          default:
            return
        }
      }
      default:
        return
    }
  }

  return {
    event,
    start: () => {
      active = true
      paused = false
      if (timer === undefined) {
        timer = setInterval(() => {
          frame++
          draw()
        }, FRAME_MS)
        timer.unref()
      }
      draw()
    },
    pause: () => {
      paused = true
      if (!atLineStart) emit("\n")
      draw()
    },
    resume: () => {
      paused = false
    },
    stop: () => {
      active = false
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      if (!atLineStart) emit("\n")
      draw()
    },
    shown: (text) => printed.includes(text)
  }
}

/** "retrying in 4 s: HTTP 500 model overloaded, attempt 3 of 10": a retry on stderr and on the status line. */
export const retryLine = (retry: BusEventOf<"session.retry">["properties"], remaining: number) => {
  const seconds = remaining < 1000 ? `${(Math.max(0, remaining) / 1000).toFixed(1)} s` : `${Math.round(remaining / 1000)} s`
  const cause = [retry.statusCode !== undefined ? `HTTP ${retry.statusCode}` : undefined, retry.message.split("\n")[0]]
    .filter((piece) => piece).join(" ")
  return `retrying in ${seconds}: ${cause}, attempt ${retry.attempt} of ${retry.attempts}`
}
