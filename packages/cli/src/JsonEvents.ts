import type { BusEvent, Part, SessionID } from "@agent/domain"

/**
 * OpenCode's `run --format json` event shapes, one object per line, plus `retry`, `hook` and `part_removed`:
 * a retried model call discards what its failed attempt produced, and a part already printed is
 * taken back, so the lines add up to what the session stores. `printed` holds the parts printed so far.
 */
export const jsonEvent = (sessionID: SessionID, event: BusEvent, printed: Set<string>): object | undefined => {
  const base = { timestamp: Date.now(), sessionID }
  if (event.type === "session.error" && event.properties.sessionID === sessionID) {
    return { type: "error", ...base, error: event.properties.error }
  }
  if (event.type === "session.retry" && event.properties.sessionID === sessionID) {
    const { attempt, attempts, delay, statusCode, message } = event.properties
    return { type: "retry", ...base, attempt, attempts, delay, ...(statusCode !== undefined ? { statusCode } : {}), message }
  }
  if (event.type === "message.part.removed" && event.properties.sessionID === sessionID) {
    const { messageID, partID } = event.properties
    return printed.delete(partID) ? { type: "part_removed", ...base, messageID, partID } : undefined
  }
  // A hook's run (docs/hooks.md); SessionEnd's comes after the run, as the runtime closes.
  if (event.type === "hook.ran" && (event.properties.sessionID === undefined || event.properties.sessionID === sessionID)) {
    const { sessionID: _own, ...hook } = event.properties
    return { type: "hook", ...base, ...hook }
  }
  const line = partEvent(sessionID, event, base)
  if (line) printed.add(line.part.id)
  return line
}

const partEvent = (sessionID: SessionID, event: BusEvent, base: { timestamp: number; sessionID: SessionID }) => {
  if (event.type !== "message.part.updated") return undefined
  const part: Part = event.properties.part
  if (part.sessionID !== sessionID) return undefined
  switch (part.type) {
    case "step-start":
      return { type: "step_start", ...base, part }
    case "step-finish":
      return { type: "step_finish", ...base, part }
    case "text":
      return part.time?.end !== undefined && !part.synthetic ? { type: "text", ...base, part } : undefined
    case "reasoning":
      return part.time?.end !== undefined ? { type: "reasoning", ...base, part } : undefined
    case "tool":
      return part.state.status === "completed" || part.state.status === "error" ? { type: "tool_use", ...base, part } : undefined
    default:
      return undefined
  }
}
