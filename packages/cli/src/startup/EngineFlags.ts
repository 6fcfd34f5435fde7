import { limitOldGenerationGrowth, unlimitOldGenerationGrowth } from "./OldGeneration.js"
import { keepWasmOnBaseline } from "./WasmTiering.js"
import { holdYoungGeneration, releaseYoungGeneration } from "./YoungGeneration.js"

/**
 * V8 settings for the CLI process, chosen for its peak memory (`agent run` is a short process
 * whose peak is most of what it costs) at no cost in CPU; each file of this folder says why.
 * Flags set here are the ones V8 reads when it uses them, not when it starts, so setting them
 * from the process itself takes effect.
 */

/** Before any module is evaluated or any wasm compiled. */
export const atStartup = () => {
  keepWasmOnBaseline()
  holdYoungGeneration()
}

export interface AfterStartupOptions {
  /** false for a long-running server: the young generation grows as V8 grows it. */
  readonly capYoungGeneration?: boolean
  /** The old generation grows by this much over what survived the last full collection. */
  readonly heapGrowingPercent?: number
}

// Set once per process: the first command module loaded is the command that runs.
let started = false

/** Once the command's modules are loaded. */
export const afterStartup = (options: AfterStartupOptions = {}) => {
  if (started) return
  started = true
  if (options.heapGrowingPercent !== undefined) limitOldGenerationGrowth(options.heapGrowingPercent)
  releaseYoungGeneration(options.capYoungGeneration !== false)
}

/**
 * Why: V8 stamps a code cache with a hash of the flags set when it is made, and turns down a cache
 * whose stamp differs from the flags of the process reading it (at startup). `agent acp` and
 * `agent serve` end with other flags than they started with (the young generation's growth, the
 * old generation's), so their cache was turned down and compiled again on every start: each
 * function cost its first compile again in the session's first steps (docs/performance.md, ACP).
 *
 * Just before the code cache is written, at exit: the flags as `atStartup` left them. It keeps
 * no state: the bundle's startup file has its own copy of this module, apart from the command's.
 */
export const startupFlagsAgain = () => {
  holdYoungGeneration()
  unlimitOldGenerationGrowth()
}
