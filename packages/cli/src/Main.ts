import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { run } from "./Cli.js"
import { withColorRule } from "./ColorConsole.js"
import { defectFailure, errorFailure, ExitCode, shutdown } from "./ExitCode.js"

/** Logs go to stderr, so stdout carries only answers and JSON events; warnings and up by default. */
const logging = Layer.merge(
  Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)),
  Logger.minimumLogLevel(
    LogLevel.fromLiteral(
      (["All", "Trace", "Debug", "Info", "Warning", "Error", "Fatal", "None"] as const).find(
        (level) => level.toLowerCase() === (process.env.AGENT_LOG_LEVEL ?? "warning").toLowerCase()
      ) ?? "Warning"
    )
  )
)

/**
 * SIGHUP (the terminal was closed) stops the program the way SIGINT and SIGTERM do, which
 * `runMain` handles: the run is aborted, the tools' process groups ended, their parts marked,
 * then exit 130 (0 for `agent serve`). Without this, Node's default for SIGHUP kills the process
 * at once and the tools' detached process groups run on. Output to a closed terminal fails (EIO)
 * from then on; those errors are dropped so they cannot crash the cleanup. Later SIGHUPs (a
 * closing terminal may send more than one) are ignored.
 */
const stopOnHangup = () => {
  let hungUp = false
  process.on("SIGHUP", () => {
    if (hungUp) return
    hungUp = true
    const ignore = () => {}
    process.stdout.on("error", ignore)
    process.stderr.on("error", ignore)
    process.kill(process.pid, "SIGTERM")
  })
}

export const main = (argv: ReadonlyArray<string>) => {
  stopOnHangup()
  return run(argv).pipe(
    // Help and usage errors (and everything else) uncoloured in a pipe or under NO_COLOR.
    withColorRule,
    // Each command builds the part of the runtime it needs (see Layers.ts).
    Effect.provide(Layer.merge(NodeContext.layer, logging)),
    Effect.map((code) => (typeof code === "number" ? code : ExitCode.ok)),
    Effect.catchAll((error) => {
      // @effect/cli has already printed the problem and the help text.
      if (ValidationError.isValidationError(error)) return Effect.succeed(ExitCode.usage)
      const { code, message } = errorFailure(error)
      return Console.error(`agent: ${message}`).pipe(Effect.as(code))
    }),
    Effect.catchAllDefect((defect) => {
      const { code, message } = defectFailure(defect)
      return Console.error(`agent: ${message}`).pipe(Effect.as(code))
    }),
    Effect.flatMap((code) => Effect.sync(() => void (process.exitCode = code))),
    (effect) =>
      NodeRuntime.runMain(effect, {
        // Logs go to stderr through `logging`; the pretty logger would print them on stdout.
        disablePrettyLogger: true,
        // A signal (SIGINT, SIGTERM, SIGHUP) interrupts the program after the run was aborted and reported: exit 130.
        teardown: (exit, onExit) =>
          onExit(Exit.isFailure(exit) ? (Cause.isInterruptedOnly(exit.cause) ? (shutdown.graceful ? ExitCode.ok : ExitCode.interrupted) : ExitCode.runtime) : Number(process.exitCode ?? 0))
      })
  )
}
