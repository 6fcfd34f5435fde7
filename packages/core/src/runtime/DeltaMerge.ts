import type { BusEvent, BusEventOf } from "@agent/domain"

type DeltaProperties = BusEventOf<"message.part.delta">["properties"]

interface Pending {
  readonly properties: DeltaProperties
  delta: string
}

/**
 * Merges a burst of text deltas into one per part and field, for the readers that pass events on
 * (the server's event stream, the event log): a model streams a token per delta. Anything else
 * about the run should `flush` the merged text first, so order is kept.
 */
export class DeltaMerge {
  private readonly pending = new Map<string, Pending>()

  /** Holds a `message.part.delta` (true) or leaves any other event to the caller (false). */
  hold(event: BusEvent): boolean {
    if (event.type !== "message.part.delta") return false
    const key = `${event.properties.partID}:${event.properties.field}`
    const open = this.pending.get(key)
    if (open) open.delta += event.properties.delta
    else this.pending.set(key, { properties: event.properties, delta: event.properties.delta })
    return true
  }

  /** Hands out the merged deltas, in the order their parts first streamed, and forgets them. */
  flush(emit: (event: BusEventOf<"message.part.delta">) => void): void {
    if (this.pending.size === 0) return
    for (const { properties, delta } of this.pending.values()) emit({ type: "message.part.delta", properties: { ...properties, delta } })
    this.pending.clear()
  }
}
