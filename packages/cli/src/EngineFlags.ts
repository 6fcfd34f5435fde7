import { PerformanceObserver } from "node:perf_hooks"
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"

/**
 * V8 settings for the CLI process, chosen for its peak memory (`agent run` is a short process
 * whose peak is most of what it costs) at no cost in CPU. Flags set here are the ones V8 reads
 * when it uses them, not when it starts, so setting them from the process itself takes effect.
 *
 * - WebAssembly stays on the baseline compiler (Liftoff). The process runs two wasm modules, the
 *   bash grammar (tree-sitter) and fetch's HTTP parser, and each is hot enough after one command
 *   or one response for V8 to recompile its largest function with the optimizing compiler: the
 *   bash lexer (one 160 KB function) and the HTTP parser's state machine took ~1 s of CPU on
 *   background threads and up to 40 MB of compiler memory at once, a quarter of the peak of a
 *   short run, to speed up parses that take under a millisecond. (Unlike `--liftoff-only`, a
 *   function Liftoff cannot compile still goes to the optimizing compiler instead of failing.)
 * - The young generation is held at 4 MB per semi-space instead of V8's 16 MB: its two
 *   semi-spaces are all touched within a few steps, and 2 × 16 MB was a fifth of the peak. A
 *   smaller one means more collections: 1 MB cost ~20% more CPU per step in `bench:loop`; 4 MB
 *   adds ~0.3% to the CPU of a 300-step `agent run` in collection pauses (their cost follows what
 *   survives, not how often they run). V8 fixes the maximum at start, so the cap is made from the
 *   growth factor (read whenever the young generation grows): it stays at its initial size while
 *   the command's modules are evaluated (each evaluation runs to its end without a pause, so
 *   growth could not be stopped in the middle of one), then may grow once, to the cap, and no more.
 *   `agent serve` is the exception: it grows the young generation as V8 does (to 16 MB). A server
 *   holds each session's request for the whole model call (seconds), and with 50 sessions a 4 MB
 *   semi-space fills several times while they wait, so it collects three times as often and moves
 *   more of what is waiting to the old generation: in bench:server's varied phase (the server
 *   started with --max-semi-space-size=4 against V8's 16 MB) 528-530 collections and 1.5-1.7 s of
 *   pauses instead of 167 and 0.8-0.9 s, and ~1 ms more CPU per step. Its peak is its sessions'.
 *   (The cap is applied by a callback that runs after a collection: it held in `agent run`, 4 MB
 *   after 5, 30 and 100 steps, but the server had grown to 16 MB after runs of 2 and of 50 sessions,
 *   two growths before the callback ran. Asking for V8's growth makes that the rule, not a race.)
 * - `agent serve` lets the old generation grow to 1.5 times what survived the last full collection
 *   (`--heap-growing-percent=50`) instead of V8's up to 4 times on a machine with 16 GB or more (V8
 *   sizes the factor by the heap limit, itself a share of the machine's memory). A server's live
 *   heap is small (40-45 MB through bench:server's soak) and what it allocates per step is garbage
 *   soon, so the factor is most of its RSS: 210-256 MB of heap for 45 MB live, RSS 300-360 MiB,
 *   against 110-124 MB and 207-222 MiB at 1.5, for ~2% more of its CPU in collections
 *   (docs/performance.md). A `--heap-growing-percent` or `--max-old-space-size` given to node wins.
 */

const SEMI_SPACE_CAP = 4 * 1024 * 1024

/** Before anything is loaded. */
export const atStartup = () => {
  setFlagsFromString("--no-wasm-dynamic-tiering")
  setFlagsFromString("--no-wasm-tier-up")
  setFlagsFromString("--semi-space-growth-factor=1")
}

/** The young generation's semi-space (its size is two of them). */
const semiSpace = () => (getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0) / 2

let started = false

/** V8's own factor: the young generation doubles when it needs to, up to V8's maximum. */
const V8_GROWTH_FACTOR = 2

/** Node flags (command line or NODE_OPTIONS) that size the old generation: given, they are left alone. */
const OLD_GENERATION_FLAGS = /--(heap[-_]growing[-_]percent|max[-_]old[-_]space[-_]size)\b/

/**
 * Once the command's modules are loaded: the young generation may grow to the cap, or, for a
 * long-running server (`capYoungGeneration: false`), as V8 grows it; with `heapGrowingPercent`
 * the old generation grows by that much over what survived the last full collection.
 */
export const afterStartup = (options: { readonly capYoungGeneration?: boolean; readonly heapGrowingPercent?: number } = {}) => {
  if (started) return
  started = true
  const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((arg) => OLD_GENERATION_FLAGS.test(arg))
  if (options.heapGrowingPercent !== undefined && !given) {
    setFlagsFromString(`--heap-growing-percent=${options.heapGrowingPercent}`)
  }
  if (options.capYoungGeneration === false) {
    setFlagsFromString(`--semi-space-growth-factor=${V8_GROWTH_FACTOR}`)
    return
  }
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
