/**
 * The server's event stream over `fetch` (EventSource cannot say `Last-Event-ID` on a reconnect of
 * its own making, nor send our header). It reconnects with the last event's number, so the server
 * replays what was missed; when it cannot (its replay buffer passed, or a restarted server numbers
 * from 1 again) the caller reloads everything (`onResync`).
 */
import type { BusEvent } from "@agent/domain"
import { eventStream } from "./Api.js"
import { continuity, parseSse } from "./Sse.js"

export type Connection = "connecting" | "live" | "reconnecting"

export interface EventStreamHandlers {
  /** Connected: every event from now on arrives through `onEvent`. `resumed` says the server replayed what was missed. */
  readonly onOpen: (resumed: boolean) => void
  readonly onEvent: (event: BusEvent, id: number) => void
  readonly onConnection: (connection: Connection) => void
}

/** No event nor heartbeat (every 10 s) for this long: the connection is taken as dead. */
const SILENCE_MS = 25_000

/** Runs until `signal` aborts. */
export const follow = async (handlers: EventStreamHandlers, signal: AbortSignal): Promise<void> => {
  let lastId: number | undefined
  let attempt = 0
  while (!signal.aborted) {
    handlers.onConnection(attempt === 0 ? "connecting" : "reconnecting")
    const attemptAbort = new AbortController()
    const stop = () => attemptAbort.abort()
    signal.addEventListener("abort", stop, { once: true })
    let silence = setTimeout(stop, SILENCE_MS)
    try {
      const response = await eventStream(lastId, attemptAbort.signal)
      if (response.status === 401) {
        location.assign(`/login?next=${encodeURIComponent(location.pathname)}`)
        return
      }
      if (!response.ok || response.body === null) throw new Error(`event stream answered ${response.status}`)
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      let checked = false
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        clearTimeout(silence)
        silence = setTimeout(stop, SILENCE_MS)
        const parsed = parseSse(buffer + value)
        buffer = parsed.rest
        for (const frame of parsed.frames) {
          const event = JSON.parse(frame.data) as { type: string; properties: unknown; id?: number }
          if (event.type === "server.connected") {
            attempt = 0
            handlers.onConnection("live")
            // A first connection has nothing to resume; a reconnect resumes unless the first numbered event says otherwise.
            if (lastId === undefined) handlers.onOpen(false)
            continue
          }
          if (event.type === "server.heartbeat") continue
          if (event.type === "server.overflow") throw new Error("fell behind")
          if (frame.id === undefined) continue
          const id = Number(frame.id)
          if (!checked && lastId !== undefined) {
            checked = true
            const verdict = continuity(lastId, id)
            // Missed events the server no longer has: start over from a fresh load.
            handlers.onOpen(verdict === "next")
          }
          checked = true
          lastId = id
          handlers.onEvent(event as unknown as BusEvent, id)
        }
      }
    } catch {
      // reconnect below
    } finally {
      clearTimeout(silence)
      signal.removeEventListener("abort", stop)
    }
    if (signal.aborted) return
    handlers.onConnection("reconnecting")
    attempt++
    await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** Math.min(attempt, 5), 5_000)))
  }
}
