// The metrics read off a finished span of the GenAI conventions (`chat`, `execute_tool`,
// `invoke_agent`): a pure function from the span to what is recorded, table-tested; OtelExport.ts
// feeds it the spans and records its measurements on the OpenTelemetry instruments.

/** A finished span, as this function needs it. */
export interface SpanView {
  readonly name: string
  readonly attributes: Readonly<Record<string, unknown>>
  readonly durationSeconds: number
}

export type Instrument =
  | "gen_ai.client.operation.duration"
  | "gen_ai.client.token.usage"
  | "gen_ai.execute_tool.duration"
  | "agent.usage.cost"

export interface Measurement {
  readonly instrument: Instrument
  readonly value: number
  readonly attributes: Readonly<Record<string, string>>
}

/** The operation a span of ours stands for, from `gen_ai.operation.name`. */
export const operationOf = (span: Pick<SpanView, "attributes">): string | undefined => {
  const operation = span.attributes["gen_ai.operation.name"]
  return typeof operation === "string" ? operation : undefined
}

const pick = (attributes: SpanView["attributes"], keys: ReadonlyArray<string>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const key of keys) {
    const value = attributes[key]
    if (typeof value === "string" && value !== "") out[key] = value
  }
  return out
}

const number = (value: unknown): number | undefined => typeof value === "number" && Number.isFinite(value) ? value : undefined

/** Low-cardinality attributes only: never the session, the call id or any content. */
const MODEL_KEYS = ["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model", "error.type"]
const AGENT_KEYS = ["gen_ai.operation.name", "gen_ai.agent.name", "gen_ai.provider.name", "gen_ai.request.model", "error.type"]
const TOOL_KEYS = ["gen_ai.operation.name", "gen_ai.tool.name", "error.type"]

export const measurementsOf = (span: SpanView): ReadonlyArray<Measurement> => {
  const operation = operationOf(span)
  if (operation === "chat") {
    const attributes = pick(span.attributes, MODEL_KEYS)
    const out: Array<Measurement> = [{ instrument: "gen_ai.client.operation.duration", value: span.durationSeconds, attributes }]
    const input = number(span.attributes["gen_ai.usage.input_tokens"])
    const output = number(span.attributes["gen_ai.usage.output_tokens"])
    if (input !== undefined) out.push({ instrument: "gen_ai.client.token.usage", value: input, attributes: { ...attributes, "gen_ai.token.type": "input" } })
    if (output !== undefined) out.push({ instrument: "gen_ai.client.token.usage", value: output, attributes: { ...attributes, "gen_ai.token.type": "output" } })
    const cost = number(span.attributes["agent.usage.cost"])
    if (cost !== undefined && cost > 0) out.push({ instrument: "agent.usage.cost", value: cost, attributes })
    return out
  }
  if (operation === "invoke_agent") {
    return [{ instrument: "gen_ai.client.operation.duration", value: span.durationSeconds, attributes: pick(span.attributes, AGENT_KEYS) }]
  }
  if (operation === "execute_tool") {
    return [{ instrument: "gen_ai.execute_tool.duration", value: span.durationSeconds, attributes: pick(span.attributes, TOOL_KEYS) }]
  }
  return []
}
