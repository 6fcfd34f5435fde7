import * as Effect from "effect/Effect"
import { afterStartup } from "./startup/EngineFlags.js"

/**
 * Runs a command's handler from a module loaded only when the command runs, so that
 * `agent --help` and argument errors never load the runtime (`@agent/core`, the ai SDK,
 * the MCP SDK, SQLite). Command definitions import only `@effect/cli` and `effect`.
 * Once the module is evaluated, the process is past its startup (see startup/EngineFlags.ts).
 */
export const lazy = <M, A, E, R>(
  load: () => Promise<M>,
  run: (module: M) => Effect.Effect<A, E, R>,
  engine?: Parameters<typeof afterStartup>[0]
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.promise(load), (module) => Effect.suspend(() => {
    afterStartup(engine)
    return run(module)
  }))
