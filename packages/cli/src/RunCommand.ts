import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { UsageError } from "./ExitCode.js"
import { lazy } from "./Lazy.js"
import { endsWithResult, makeReport } from "./RunResult.js"

const message = Args.text({ name: "message" }).pipe(
  Args.withDescription("the message, as one or more words; a word - waits for stdin and appends it"),
  Args.repeated
)

export const runConfig = {
  message,
  agent: Options.text("agent").pipe(Options.withDescription("agent to run (default: the default agent)"), Options.optional),
  model: Options.text("model").pipe(Options.withAlias("m"), Options.withDescription("provider/model"), Options.optional),
  continue: Options.boolean("continue").pipe(Options.withAlias("c"), Options.withDescription("continue the most recent session")),
  session: Options.text("session").pipe(Options.withAlias("s"), Options.withDescription("session id to continue"), Options.optional),
  fork: Options.boolean("fork").pipe(Options.withDescription("fork the session given by -c or -s and continue the copy")),
  title: Options.text("title").pipe(Options.withDescription("title of a new session"), Options.optional),
  file: Options.text("file").pipe(Options.withAlias("f"), Options.withDescription("attach a file (repeatable)"), Options.repeated),
  dir: Options.text("dir").pipe(Options.withDescription("run as if started in this directory"), Options.optional),
  format: Options.choice("format", ["default", "json"]).pipe(
    Options.withDescription("default: the answer as text; json: one event per line, ending with a result event"),
    Options.withDefault("default" as const)
  ),
  autoApprove: Options.boolean("auto-approve").pipe(
    Options.withDescription("answer permission asks with \"once\"; deny rules still apply")
  ),
  variant: Options.text("variant").pipe(
    Options.withDescription("one of the model's variants (provider.<id>.models.<model>.variants), e.g. a reasoning effort"),
    Options.optional
  ),
  maxSteps: Options.integer("max-steps").pipe(Options.withDescription("stop after this many model steps"), Options.optional),
  command: Options.text("command").pipe(
    Options.withDescription("run a custom command (config, .agent/command/*.md, MCP prompts, init); the message is its arguments"),
    Options.optional
  ),
  attach: Options.text("attach").pipe(
    Options.withDescription(
      "run on a running `agent serve` at this url (credentials: user:password@ in the url, or AGENT_SERVER_USERNAME / AGENT_SERVER_PASSWORD)"
    ),
    Options.optional
  ),
  approver: Options.text("approver").pipe(
    Options.withDescription(
      "with no terminal, send permission asks to this `agent serve` and wait for someone to answer them there (credentials as for --attach); see docs/permissions.md"
    ),
    Options.optional
  ),
  approverTimeout: Options.integer("approver-timeout").pipe(
    Options.withDescription("seconds to wait for the approver's answer (default 300, or permission.approver.timeout)"),
    Options.optional
  ),
  approverFallback: Options.choice("approver-fallback", ["deny", "allow"]).pipe(
    Options.withDescription("what an ask nobody answered in time becomes (default deny: the run stops, exit 3)"),
    Options.optional
  ),
  record: Options.text("record").pipe(
    Options.withDescription("write every model call of the run to this file (a cassette), to replay it later with --replay"),
    Options.optional
  ),
  replay: Options.text("replay").pipe(
    Options.withDescription(
      "answer from a cassette file instead of a model (no key, no network; exit 1 when the run leaves the recording), or `demo` for the built-in demo"
    ),
    Options.optional
  ),
  interactive: Options.boolean("interactive").pipe(
    Options.withAlias("i"),
    Options.withDescription("after the answer, keep reading prompts from the terminal (same session) until /exit or Ctrl-D")
  )
}

export type RunInput = Command.Command.ParseConfig<typeof runConfig>

/** Either way the run ends in an exit code, or in an error that names its problem (see Main.ts). */
type RunEffect = Effect.Effect<number, { readonly _tag: string; readonly message: string }>

export const runCommand = Command.make("run", runConfig, (input): RunEffect => {
  const url = Option.getOrUndefined(input.attach)
  const report = makeReport()
  const replaying = Option.isSome(input.record) ? "--record" : Option.isSome(input.replay) ? "--replay" : undefined
  if (url !== undefined && Option.isSome(input.approver)) {
    const error = new UsageError({ message: "--approver cannot be used with --attach (the server holds the asks: answer them there)" })
    return Effect.fail(error).pipe(endsWithResult(input.format === "json", report))
  }
  if (url !== undefined && replaying !== undefined) {
    const error = new UsageError({ message: `${replaying} cannot be used with --attach (the server talks to its own model)` })
    return Effect.fail(error).pipe(endsWithResult(input.format === "json", report))
  }
  const run: RunEffect = url === undefined
    ? lazy(() => import("./Run.js"), (module) => module.run(input, report))
    : lazy(() => import("./Attach.js"), (module) => module.attach(input, url, report))
  return run.pipe(endsWithResult(input.format === "json", report))
}).pipe(
  Command.withDescription("Run the agent on a message and print the answer (exit codes: see --help of agent)")
)
