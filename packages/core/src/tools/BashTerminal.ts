// A bash command run in the editor's terminal (see EditorTerminal) instead of a local process:
// the same endings as a local run (exit, timeout, abort), the editor's output as the result.
import { Effect, Fiber } from "effect"
import { isSecretName } from "../config/ConfigRedaction.js"
import type { EditorTerminalShape, TerminalExit } from "../tool/EditorTerminal.js"
import * as Tool from "../tool/Tool.js"

const TOOL = "bash"

export type Ending = "exit" | "timeout" | "aborted"

/** Completes when `signal` fires (at once if it has). */
export const abortedBy = (signal: AbortSignal) =>
  Effect.async<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

export interface TerminalRun {
  readonly command: string
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly description: string
  readonly timeout: number
  /** The editor keeps at most this much output (the local run keeps as much in memory). */
  readonly outputByteLimit: number
  /** How long a killed command may take to report its end. */
  readonly killGraceMs: number
}

/**
 * The environment sent to the editor for its terminal: the runtime's, without the variables whose names
 * say they hold a credential (provider keys, tokens). They would travel over the protocol and could show in
 * the editor's logs; the terminal still has the editor's own environment.
 */
export const terminalEnv = (env: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter(([name]) => !isSecretName(name)))

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

/** A request to an editor that is gone must not hold the call: at most this long. */
const REQUEST_TIMEOUT_MS = 10_000

/**
 * Runs the command in a new editor terminal until it exits, times out or the run is aborted (then
 * the terminal's command is killed), and returns what it printed. The terminal is released
 * whatever happens; the tool call keeps showing it in the editor.
 */
export const runInTerminal = (terminals: EditorTerminalShape, ctx: Tool.ToolContext, run: TerminalRun) =>
  Effect.acquireUseRelease(
    terminals.create(ctx.sessionID, {
      commandLine: run.command,
      cwd: run.cwd,
      env: terminalEnv(run.env),
      outputByteLimit: run.outputByteLimit
    }).pipe(
      // Acquiring cannot be interrupted: an editor that never answers must not hold the call (or a cancel).
      // The request itself can be given up on, or the timeout could not end it.
      Effect.interruptible,
      Effect.timeoutFail({ duration: REQUEST_TIMEOUT_MS, onTimeout: () => new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms`) }),
      Effect.mapError((error) => fail(`Could not start the command in the editor's terminal: ${error.message}`))
    ),
    (terminal) =>
      Effect.gen(function*() {
        // The editor embeds the terminal in the tool call from here on.
        yield* ctx.metadata({ metadata: { output: "", description: run.description, terminalId: terminal.id } })
        const exited = yield* Effect.fork(Effect.either(terminal.waitForExit))
        const ending: Ending = yield* Effect.raceAll([
          Effect.as(Fiber.await(exited), "exit" as const),
          Effect.as(Effect.sleep(run.timeout), "timeout" as const),
          Effect.as(abortedBy(ctx.abort), "aborted" as const)
        ])
        if (ending !== "exit") yield* terminal.kill.pipe(Effect.timeout(REQUEST_TIMEOUT_MS), Effect.ignore)
        const waited = yield* Fiber.join(exited).pipe(
          Effect.timeout(ending === "exit" ? REQUEST_TIMEOUT_MS : run.killGraceMs),
          Effect.orElseSucceed(() => undefined)
        )
        yield* Fiber.interrupt(exited)
        if (waited !== undefined && waited._tag === "Left") {
          return yield* fail(`The editor's terminal failed while running the command: ${waited.left.message}`)
        }
        const final = yield* terminal.output.pipe(
          Effect.timeoutFail({ duration: REQUEST_TIMEOUT_MS, onTimeout: () => new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms`) }),
          Effect.mapError((error) => fail(`Could not read the command's output from the editor's terminal: ${error.message}`))
        )
        const exit: TerminalExit = waited?._tag === "Right" ? waited.right : final.exit ?? { code: null, signal: null }
        const dropped = final.truncated ? `[earlier output was not kept: the editor keeps the last ${run.outputByteLimit} bytes]\n` : ""
        return { ending, exit, launch: undefined, text: dropped + final.output, terminalId: terminal.id }
      }),
    // Released whatever happened (uninterruptibly), but not held by an editor that does not answer.
    (terminal) => terminal.release.pipe(Effect.interruptible, Effect.timeout(REQUEST_TIMEOUT_MS), Effect.ignore)
  )
