import type { Agent, CorrectedError, DeniedError, MessageID, PermissionRuleset, RejectedError, SessionID } from "@agent/domain"
import { Effect, JSONSchema, ParseResult, Schema } from "effect"

/** What a running tool may ask of the session. */
export interface ToolContext {
  readonly sessionID: SessionID
  readonly messageID: MessageID
  readonly callID: string
  readonly agent: Agent
  /** Fires when the run is aborted; tools that start processes or requests pass it on. */
  readonly abort: AbortSignal
  /** Asks permission for this call; fails when a rule denies or the user rejects. */
  readonly ask: (request: {
    readonly permission: string
    readonly patterns: ReadonlyArray<string>
    readonly always: ReadonlyArray<string>
    /** Patterns the rules cannot read, with why (see `PermissionService.AskInput.opaque`). */
    readonly opaque?: ReadonlyArray<{ readonly pattern: string; readonly reason: string }>
    /** The call runs in the OS sandbox: rules with the pattern `sandboxed` apply (see `Permission.forSandbox`). */
    readonly sandboxed?: boolean
    /** Only a person may answer this ask, and why (`--auto-approve` leaves it alone). */
    readonly requiresPerson?: string
    readonly metadata?: Record<string, unknown>
  }) => Effect.Effect<void, DeniedError | RejectedError | CorrectedError>
  /**
   * The rules `ask` decides by, in order: the agent's and the session's, then the enterprise
   * policy's. For what a tool decides without asking, such as leaving the files the agent may
   * not read out of a search (`Permission.denier`).
   */
  readonly rules: PermissionRuleset
  /** Live progress: shown to the user while the tool runs. */
  readonly metadata: (update: { readonly title?: string; readonly metadata?: Record<string, unknown> }) => Effect.Effect<void>
}

export interface ToolAttachment {
  readonly mime: string
  readonly url: string
  readonly filename?: string
}

export interface ToolResult {
  readonly title: string
  readonly output: string
  readonly metadata?: Record<string, unknown>
  readonly attachments?: ReadonlyArray<ToolAttachment>
  /** The tool already cut its output (e.g. bash keeps the tail); skip generic truncation. */
  readonly truncated?: boolean
}

/** A tool's own failure, shown to the model as the tool result. */
export class ToolExecutionError extends Schema.TaggedError<ToolExecutionError>()("ToolExecutionError", {
  tool: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return this.detail
  }
}

/** The model sent arguments that do not fit the tool's schema. */
export class ToolInputError extends Schema.TaggedError<ToolInputError>()("ToolInputError", {
  tool: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `The ${this.tool} tool was called with invalid arguments: ${this.detail}.\nPlease rewrite the input so it satisfies the expected schema.`
  }
}

export type ToolFailure = ToolExecutionError | ToolInputError | DeniedError | RejectedError | CorrectedError

export interface Tool<Params = unknown> {
  readonly id: string
  readonly description: string
  readonly parameters: Schema.Schema<Params, any>
  /** JSON Schema sent to the model instead of one derived from `parameters` (MCP tools bring their own). */
  readonly jsonSchema?: Record<string, unknown>
  /** A description tailored to the agent (e.g. the task tool lists the subagents it may use). */
  readonly describe?: (agent: Agent) => Effect.Effect<string>
  readonly execute: (params: Params, context: ToolContext) => Effect.Effect<ToolResult, ToolFailure>
  /**
   * What the tool does to the project's files, so a step's snapshot can skip the full scan:
   * `none` never changes them; `listed` changes only the files it names (`filePath` in its input,
   * `filepath` and `files[].filepath`/`movedFrom` in its result metadata). Absent: anything
   * (bash, MCP and custom tools), so the whole project is scanned after the step.
   */
  readonly fileEffects?: FileEffects
}

export type FileEffects = "none" | "listed"

/** A tool of any parameter type, as registries and layers hold them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any>

/** Defines a tool; `parameters` is an effect/Schema, sent to the model as JSON Schema. */
export const make = <Params, Encoded>(definition: {
  readonly id: string
  readonly description: string
  readonly parameters: Schema.Schema<Params, Encoded>
  readonly jsonSchema?: Record<string, unknown>
  readonly describe?: (agent: Agent) => Effect.Effect<string>
  readonly execute: (params: Params, context: ToolContext) => Effect.Effect<ToolResult, ToolFailure>
  readonly fileEffects?: FileEffects
}): Tool<Params> => definition as Tool<Params>

const jsonSchemas = new WeakMap<object, Record<string, unknown>>()

/** JSON Schema for the model: a plain object schema, without `$schema`. Computed once per tool. */
export const jsonSchemaOf = (tool: Tool): Record<string, unknown> => {
  if (tool.jsonSchema) return tool.jsonSchema
  let schema = jsonSchemas.get(tool.parameters)
  if (!schema) {
    const { $schema: _ignored, ...rest } = JSONSchema.make(tool.parameters) as unknown as Record<string, unknown>
    schema = rest
    jsonSchemas.set(tool.parameters, schema)
  }
  return schema
}

const EXPECTED = /^Expected (.+), actual (.+)$/s

/**
 * The issues worth telling, one per field. A union reports every member it tried: an optional
 * field with a bad value fails both its schema and `undefined` ("Expected undefined" adds
 * nothing), and a choice of literals fails each literal, which reads better as one list.
 */
const meaningfulIssues = (issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>) => {
  const byPath = new Map<string, Array<ParseResult.ArrayFormatterIssue>>()
  for (const issue of issues) {
    const key = JSON.stringify(issue.path)
    byPath.set(key, [...(byPath.get(key) ?? []), issue])
  }
  return [...byPath.values()].flatMap((group) => {
    const kept = group.length > 1 ? group.filter((issue) => !issue.message.startsWith("Expected undefined, actual")) : group
    const parsed = kept.map((issue) => EXPECTED.exec(issue.message))
    const actual = parsed[0]?.[2]
    if (kept.length > 1 && parsed.every((match) => match !== null && match[2] === actual)) {
      const expected = parsed.map((match) => match![1]!)
      const list = `${expected.slice(0, -1).join(", ")} or ${expected.at(-1)}`
      return [{ ...kept[0]!, message: `Expected ${list}, actual ${actual}` }]
    }
    return kept
  })
}

/** Decodes the model's arguments, or explains what is wrong in words the model can act on. */
export const decodeInput = <Params>(tool: Tool<Params>, input: unknown): Effect.Effect<Params, ToolInputError> =>
  Schema.decodeUnknown(tool.parameters, { errors: "all", onExcessProperty: "ignore" })(input).pipe(
    Effect.mapError((error) =>
      new ToolInputError({
        tool: tool.id,
        detail: meaningfulIssues(ParseResult.ArrayFormatter.formatErrorSync(error))
          .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
          .join("; ")
      })
    )
  )

