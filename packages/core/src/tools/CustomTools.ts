import { Effect, Either, ParseResult, Runtime, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigService } from "../config/ConfigService.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import { exec } from "../sandbox/Exec.js"
import { Sandbox, type SandboxShape } from "../sandbox/Sandbox.js"
import * as Tool from "../tool/Tool.js"
import { shellFor } from "./Bash.js"
import { describeError, importModule } from "./ModuleImport.js"

/**
 * Custom tools: plain JavaScript or TypeScript modules in `tool/` or `tools/` of a config
 * directory (the global config dir, and every `.opencode/` and `.agent/` dir). Authors write
 * plain objects and promises, no Effect:
 *
 * ```js
 * // .agent/tools/weather.js → tool "weather"; `export const forecast = {...}` → "weather_forecast"
 * export default {
 *   description: "The current weather in a city",
 *   args: {
 *     city: { type: "string", description: "City name" },
 *     units: { type: "string", enum: ["metric", "imperial"], optional: true },
 *     days: { type: "array", items: { type: "integer" }, optional: true }
 *   },
 *   async execute(args, context) {
 *     // context: { sessionID, messageID, agent, directory, worktree, abort, shell }
 *     const { stdout } = await context.shell("curl -s wttr.in/" + args.city) // in the agent's sandbox
 *     return `Sunny in ${args.city}` // or { output, title?, metadata? }
 *   }
 * }
 * ```
 *
 * `args` values are {@link ArgSpec}s (types `string`, `number`, `integer`, `boolean`, `array`
 * with `items`, `object` with `properties`; required unless `optional: true`) or effect
 * Schemas. The default export becomes the tool named after the file; every other export that
 * looks like a definition (an object with `execute`) becomes `<file>_<export>`. Later config
 * dirs win over earlier ones for the same name. TypeScript files are transpiled with esbuild
 * when it can be found; a file that cannot be loaded is reported and skipped.
 */

export interface ArgSpec {
  readonly type: "string" | "number" | "integer" | "boolean" | "array" | "object"
  readonly description?: string
  /** Leave the argument out of the required list. */
  readonly optional?: boolean
  /** Only these values are accepted. */
  readonly enum?: ReadonlyArray<string | number | boolean>
  /** Element type of an array (any value when missing). */
  readonly items?: ArgSpec
  /** Fields of an object (any keys when missing). */
  readonly properties?: Readonly<Record<string, ArgSpec>>
}

/** What `execute` receives besides its arguments. */
export interface CustomToolContext {
  readonly sessionID: string
  readonly messageID: string
  /** The name of the agent running the tool. */
  readonly agent: string
  readonly directory: string
  readonly worktree: string
  /** Fires when the run is aborted. */
  readonly abort: AbortSignal
  /**
   * Runs a shell command in the agent's sandbox, as the bash tool would (the project directory by
   * default, no permission asked: the tool itself was allowed). A tool that starts processes
   * itself (`child_process`) runs them unsandboxed: the runtime cannot see them.
   */
  readonly shell: (command: string, options?: CustomToolShellOptions) => Promise<CustomToolShellResult>
}

export interface CustomToolShellOptions {
  /** Absolute, or relative to the project directory. */
  readonly cwd?: string
  /** Milliseconds (default 120000). */
  readonly timeout?: number
}

export interface CustomToolShellResult {
  /** `null` when killed by a signal or the timeout. */
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
  readonly timedOut: boolean
  readonly sandboxed: boolean
  /** What the sandbox blocked: paths, and hosts as `host:port`. */
  readonly blocked: ReadonlyArray<string>
}

export type CustomToolResult = string | { readonly output: string; readonly title?: string; readonly metadata?: Record<string, unknown> }

export interface CustomToolDefinition {
  readonly description: string
  readonly args?: Readonly<Record<string, ArgSpec | Schema.Schema.AnyNoContext>>
  readonly execute: (
    args: Record<string, unknown>,
    context: CustomToolContext
  ) => CustomToolResult | Promise<CustomToolResult>
}

/** A file, or one export of it, that could not become a tool. */
export interface CustomToolProblem {
  readonly file: string
  readonly export?: string
  readonly reason: string
}

export interface CustomToolsLoaded {
  readonly tools: ReadonlyArray<Tool.AnyTool>
  readonly problems: ReadonlyArray<CustomToolProblem>
  /** Where each tool came from, by id. */
  readonly sources: ReadonlyMap<string, string>
}

/** A struct field such as `Schema.optional(Schema.String)`, without requirements. */
type FieldSignature = Schema.PropertySignature<
  Schema.PropertySignature.Token,
  any,
  PropertyKey,
  Schema.PropertySignature.Token,
  any,
  boolean,
  never
>

const SUBDIRECTORIES = ["tool", "tools"] as const
const EXTENSIONS = [".js", ".mjs", ".ts"] as const
const TOOL_ID = /^[A-Za-z0-9_-]{1,64}$/

// ---------------------------------------------------------------------------------------------
// Validating definitions

const ArgSpecSchema: Schema.Schema<ArgSpec> = Schema.suspend(() =>
  Schema.Struct({
    type: Schema.Literal("string", "number", "integer", "boolean", "array", "object"),
    description: Schema.optionalWith(Schema.String, { exact: true }),
    optional: Schema.optionalWith(Schema.Boolean, { exact: true }),
    enum: Schema.optionalWith(
      Schema.Array(Schema.Union(Schema.String, Schema.Number, Schema.Boolean)).pipe(Schema.minItems(1)),
      { exact: true }
    ),
    items: Schema.optionalWith(ArgSpecSchema, { exact: true }),
    properties: Schema.optionalWith(Schema.Record({ key: Schema.String, value: ArgSpecSchema }), { exact: true })
  })
)

const EffectSchema = Schema.declare(
  (u: unknown): u is Schema.Schema.AnyNoContext | FieldSignature =>
    Schema.isSchema(u) || Schema.isPropertySignature(u),
  { identifier: "EffectSchema" }
)

const Definition = Schema.Struct({
  description: Schema.String.pipe(Schema.minLength(1)),
  args: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Union(EffectSchema, ArgSpecSchema) })),
  execute: Schema.declare(
    (u: unknown): u is CustomToolDefinition["execute"] => typeof u === "function",
    { identifier: "Function", message: () => "execute must be a function" }
  )
})

const ResultSchema = Schema.Union(
  Schema.String,
  Schema.Struct({
    output: Schema.String,
    title: Schema.optional(Schema.String),
    metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  })
)

const formatIssues = (error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ")

/** An export is taken for a tool definition when it is an object with `execute`. */
const looksLikeTool = (value: unknown): boolean =>
  typeof value === "object" && value !== null && "execute" in value

// ---------------------------------------------------------------------------------------------
// Building the parameter schema

type Field = Schema.Schema.AnyNoContext | FieldSignature

const annotate = (schema: Schema.Schema.AnyNoContext, description: string | undefined): Schema.Schema.AnyNoContext =>
  description === undefined ? schema : schema.annotations({ description })

/** The effect Schema for one argument spec. */
export const schemaFromSpec = (spec: ArgSpec): Schema.Schema.AnyNoContext => {
  const base = ((): Schema.Schema.AnyNoContext => {
    if (spec.enum) return Schema.Union(...spec.enum.map((value) => Schema.Literal(value)))
    switch (spec.type) {
      case "string":
        return Schema.String
      case "number":
        return Schema.Number
      case "integer":
        return Schema.Int
      case "boolean":
        return Schema.Boolean
      case "array":
        return Schema.Array(spec.items ? schemaFromSpec(spec.items) : Schema.Unknown)
      case "object":
        return spec.properties ? structFromSpecs(spec.properties) : Schema.Record({ key: Schema.String, value: Schema.Unknown })
    }
  })()
  return annotate(base, spec.description)
}

const fieldFrom = (value: ArgSpec | Schema.Schema.AnyNoContext | FieldSignature): Field => {
  if (Schema.isSchema(value) || Schema.isPropertySignature(value)) return value
  const schema = schemaFromSpec(value)
  return value.optional ? Schema.optional(schema) : schema
}

const structFromSpecs = (
  specs: Readonly<Record<string, ArgSpec | Schema.Schema.AnyNoContext | FieldSignature>>
): Schema.Schema.AnyNoContext => {
  const fields: Record<string, Field> = {}
  for (const [key, value] of Object.entries(specs)) fields[key] = fieldFrom(value)
  return Schema.Struct(fields)
}

// ---------------------------------------------------------------------------------------------
// Adapting a definition to a tool

/** `context.shell`: one command in the agent's sandbox, run to completion. */
const sandboxedShell = (
  id: string,
  instance: InstanceInfo,
  sandbox: SandboxShape,
  context: Tool.ToolContext
) =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const plan = yield* sandbox.plan(context.agent.sandbox)
    const env = Object.fromEntries(
      Object.entries(instance.env).filter((entry): entry is [string, string] => entry[1] !== undefined)
    )
    return (command: string, options: CustomToolShellOptions = {}): Promise<CustomToolShellResult> =>
      Runtime.runPromise(runtime)(
        Effect.gen(function*() {
          const cwd = path.resolve(instance.directory, options.cwd ?? ".")
          const { blocked, launch, result } = yield* Effect.acquireUseRelease(
            sandbox.prepare({
              plan,
              argv: [shellFor(instance), "-c", command],
              cwd,
              env,
              keeper: "exec",
              tool: id,
              sessionID: context.sessionID,
              callID: context.callID
            }),
            (launch) =>
              Effect.gen(function*() {
                const result = yield* exec(launch, { cwd, timeoutMs: options.timeout ?? 120_000, maxBytes: 16 * 1024 * 1024 })
                const blocked = launch.sandboxed ? yield* launch.blocked(`${result.stdout}\n${result.stderr}`) : []
                return { blocked, launch, result }
              }),
            (launch) => launch.release
          )
          if (result.error !== undefined) return yield* Effect.fail(new Error(`could not run the command: ${result.error}`))
          return {
            exitCode: result.timedOut ? null : result.code,
            stdout: result.stdout,
            stderr: result.stderr,
            timedOut: result.timedOut,
            sandboxed: launch.sandboxed,
            blocked: blocked.map((entry) => entry.target)
          }
        }).pipe(Effect.mapError((error) => new Error(error.message)))
      )
  })

const toTool = (
  id: string,
  definition: typeof Definition.Type,
  original: unknown,
  instance: InstanceInfo,
  sandbox: SandboxShape
): Tool.AnyTool => {
  const fail = (detail: string) => new Tool.ToolExecutionError({ tool: id, detail })
  return Tool.make({
    id,
    description: definition.description,
    parameters: structFromSpecs(definition.args ?? {}),
    execute: (params, context) =>
      Effect.flatMap(sandboxedShell(id, instance, sandbox, context), (shell) =>
        Effect.tryPromise({
          try: async (interrupted) =>
            // Called on the exported object, so `this` works in methods.
            definition.execute.call(original, params as Record<string, unknown>, {
              sessionID: context.sessionID,
              messageID: context.messageID,
              agent: context.agent.name,
              directory: instance.directory,
              worktree: instance.worktree,
              abort: AbortSignal.any([context.abort, interrupted]),
              shell
            }),
          catch: (error) => fail(error instanceof Error ? error.message : String(error))
        })).pipe(
        Effect.flatMap((result) =>
          Schema.decodeUnknown(ResultSchema)(result).pipe(
            Effect.mapError((error) =>
              fail(`The tool returned an invalid result (expected a string or { output, title?, metadata? }): ${formatIssues(error)}`)
            )
          )
        ),
        Effect.map((result): Tool.ToolResult =>
          typeof result === "string"
            ? { title: id, output: result }
            : { title: result.title ?? id, output: result.output, ...(result.metadata ? { metadata: result.metadata } : {}) }
        )
      )
  })
}

/** The tools of one file, and what was wrong with it. */
const loadFile = (file: string, instance: InstanceInfo, sandbox: SandboxShape, bases: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const base = path.basename(file, path.extname(file))
    const problems: Array<CustomToolProblem> = []
    const tools: Array<Tool.AnyTool> = []
    const loaded = yield* Effect.either(
      Effect.tryPromise({ try: () => importModule(file, bases), catch: describeError })
    )
    if (Either.isLeft(loaded)) {
      problems.push({ file, reason: `could not be loaded: ${loaded.left}` })
      return { tools, problems }
    }
    const module = loaded.right
    for (const [name, value] of Object.entries(module)) {
      const isDefault = name === "default"
      if (!isDefault && !looksLikeTool(value)) continue
      const id = isDefault ? base : `${base}_${name}`
      const problem = (reason: string) => problems.push({ file, export: name, reason })
      if (isDefault && !looksLikeTool(value)) {
        problem("the default export is not a tool definition ({ description, args, execute })")
        continue
      }
      if (!TOOL_ID.test(id)) {
        problem(`"${id}" is not a valid tool name (letters, digits, _ and -, at most 64 characters)`)
        continue
      }
      const decoded = Schema.decodeUnknownEither(Definition)(value, { errors: "all" })
      if (Either.isLeft(decoded)) {
        problem(`invalid tool definition: ${formatIssues(decoded.left)}`)
        continue
      }
      const tool = yield* Effect.try(() => {
        const built = toTool(id, decoded.right, value, instance, sandbox)
        // The model gets the arguments as JSON Schema; a schema that cannot say it is unusable.
        Tool.jsonSchemaOf(built)
        return built
      }).pipe(Effect.either)
      if (Either.isLeft(tool)) {
        problem(`invalid arguments: ${describeError(tool.left.error)}`)
        continue
      }
      tools.push(tool.right)
    }
    if (tools.length === 0 && problems.length === 0) {
      problems.push({ file, reason: "exports no tool definition" })
    }
    return { tools, problems }
  })

const sourceFiles = (dir: string): Array<string> => {
  let names: Array<string>
  try {
    names = fs.readdirSync(dir)
  } catch {
    return []
  }
  return names
    .filter((name) => !name.startsWith(".") && EXTENSIONS.some((extension) => name.endsWith(extension)))
    .filter((name) => !name.endsWith(".d.ts"))
    .sort()
    .map((name) => path.join(dir, name))
    .filter((file) => {
      try {
        return fs.statSync(file).isFile()
      } catch {
        return false
      }
    })
}

/** Every custom tool with the problems found on the way; problems are also logged as warnings. */
export const scan: Effect.Effect<CustomToolsLoaded, never, Instance | ConfigService | Sandbox> = Effect.gen(function*() {
  const instance = yield* Instance
  const sandbox = yield* Sandbox
  const info = yield* (yield* ConfigService).info()
  const bases = [
    import.meta.url,
    path.join(instance.worktree, "package.json"),
    path.join(instance.directory, "package.json"),
    ...info.directories.map((dir) => path.join(dir, "package.json"))
  ]
  const byId = new Map<string, Tool.AnyTool>()
  const sources = new Map<string, string>()
  const problems: Array<CustomToolProblem> = []
  for (const dir of info.directories) {
    for (const sub of SUBDIRECTORIES) {
      for (const file of sourceFiles(path.join(dir, sub))) {
        const loaded = yield* loadFile(file, instance, sandbox, bases)
        for (const tool of loaded.tools) {
          byId.set(tool.id, tool)
          sources.set(tool.id, file)
        }
        problems.push(...loaded.problems)
      }
    }
  }
  for (const problem of problems) {
    yield* Effect.logWarning(
      `custom tool skipped: ${problem.file}${problem.export ? ` (export ${problem.export})` : ""}: ${problem.reason}`
    )
  }
  return { tools: [...byId.values()], problems, sources }
}).pipe(Effect.withSpan("CustomTools.scan"))

/** The custom tools of the instance's config dirs; broken files are logged and skipped. */
export const load: Effect.Effect<ReadonlyArray<Tool.AnyTool>, never, Instance | ConfigService | Sandbox> = Effect.map(
  scan,
  (loaded) => loaded.tools
)
