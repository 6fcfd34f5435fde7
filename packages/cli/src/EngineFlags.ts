import { PerformanceObserver } from "node:perf_hooks"
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"

/**
 * V8 settings for the CLI process, chosen for its peak memory (`agent run` is a short process
 * whose peak is most of what it costs) at no cost in CPU. Flags set here are the ones V8 reads
 * when it uses them, not when it starts, so setting them from the process itself takes effect.
 *
 * - WebAssembly stays on the baseline compiler (Liftoff). The process runs two wasm modules, the
 *   bash grammar (tree-sitter) and fetch's HTTP parser, and both are hot enough after one command
 *   or one response to be recompiled by the optimizing compiler: the lexer of the bash grammar is
 *   one 160 KB function, whose recompilation took ~0.8 s of CPU on a background thread and up to
 *   40 MB of memory (two compilations at once), to speed up parses that take under a millisecond.
 *   (Without `--liftoff-only`, a function Liftoff cannot compile still goes to the optimizing
 *   compiler instead of failing.)
 * - The young generation is held at 8 MB per semi-space instead of V8's 16 MB: its two
 *   semi-spaces are all touched within a few steps, and 2 × 16 MB was a quarter of the peak. A
 *   smaller one costs CPU in long sessions: more collections, each with a fixed cost (1 MB: ~20%
 *   more CPU per step in `bench:loop`; 4 MB: +1% of a 100-step run in collection pauses, 8 MB
 *   about half that). V8 fixes the maximum at start, so the cap is made from the growth factor
 *   (read whenever the young generation grows): it stays at its initial size while the command's
 *   modules are evaluated (each evaluation runs to its end without a pause, so growth could not be
 *   stopped in the middle of one), then may grow once, to the cap, and no more.
 */

const SEMI_SPACE_CAP = 8 * 1024 * 1024

/** Before anything is loaded. */
export const atStartup = () => {
  setFlagsFromString("--no-wasm-dynamic-tiering")
  setFlagsFromString("--no-wasm-tier-up")
  setFlagsFromString("--semi-space-growth-factor=1")
}

/** The young generation's semi-space (its size is two of them). */
const semiSpace = () => (getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0) / 2

let started = false

/** Once the command's modules are loaded: the young generation may grow to the cap. */
export const afterStartup = () => {
  if (started) return
  started = true
  const semi = semiSpace()
  if (semi === 0 || semi >= SEMI_SPACE_CAP) return
  // One step from the initial size to the cap; stopped from growing further after the collection that grew it.
  setFlagsFromString(`--semi-space-growth-factor=${Math.max(2, Math.floor(SEMI_SPACE_CAP / semi))}`)
  const observer = new PerformanceObserver(() => {
    if (semiSpace() < SEMI_SPACE_CAP) return
    setFlagsFromString("--semi-space-growth-factor=1")
    observer.disconnect()
  })
  observer.observe({ entryTypes: ["gc"] })
}
