import type * as Console from "effect/Console"
import * as Effect from "effect/Effect"

/** Whether a terminal may be sent escape sequences (https://no-color.org, TERM=dumb). */
export const ansiAllowed = (env: NodeJS.ProcessEnv = process.env) =>
  (env.NO_COLOR === undefined || env.NO_COLOR === "") && env.TERM !== "dumb"

/** SGR sequences (colours, bold): what @effect/cli's help and error docs are painted with. */
const SGR = /\x1b\[[0-9;]*m/g

const strip = (args: ReadonlyArray<unknown>) => args.map((arg) => (typeof arg === "string" ? arg.replace(SGR, "") : arg))

/** Whether text written to this stream may be coloured: a terminal, without NO_COLOR or TERM=dumb. */
export const colorWanted = (stream: { readonly isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env) =>
  stream.isTTY === true && ansiAllowed(env)

/**
 * The console without colour on a stream that does not want it. @effect/cli paints its help and
 * its usage errors unconditionally, which a pipe or a log file shows as escape codes.
 */
export const uncolored = (base: Console.Console, wanted: { readonly stdout: boolean; readonly stderr: boolean }): Console.Console => {
  if (wanted.stdout && wanted.stderr) return base
  const out = (write: (...args: ReadonlyArray<unknown>) => void) => (...args: ReadonlyArray<unknown>) =>
    write(...(wanted.stdout ? args : strip(args)))
  const err = (write: (...args: ReadonlyArray<unknown>) => void) => (...args: ReadonlyArray<unknown>) =>
    write(...(wanted.stderr ? args : strip(args)))
  const unsafe = {
    ...base.unsafe,
    log: out(base.unsafe.log.bind(base.unsafe)),
    info: out(base.unsafe.info.bind(base.unsafe)),
    error: err(base.unsafe.error.bind(base.unsafe)),
    warn: err(base.unsafe.warn.bind(base.unsafe))
  }
  return {
    ...base,
    unsafe,
    log: (...args) => Effect.sync(() => unsafe.log(...args)),
    info: (...args) => Effect.sync(() => unsafe.info(...args)),
    error: (...args) => Effect.sync(() => unsafe.error(...args)),
    warn: (...args) => Effect.sync(() => unsafe.warn(...args))
  }
}

/** Runs `effect` with a console that colours only the streams that want it. */
export const withColorRule = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.console, (base) =>
    Effect.withConsole(effect, uncolored(base, { stdout: colorWanted(process.stdout), stderr: colorWanted(process.stderr) })))

