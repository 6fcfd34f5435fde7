import { setFlagsFromString } from "node:v8"

/**
 * Why: V8's growth factor (up to 4× what survived, on a machine with 16 GB or more) was most of a
 * server's RSS: 300-360 MiB for a 45 MB live heap, against 207-222 MiB at 1.5×, for ~2% more CPU.
 *
 * `agent serve` lets the old generation grow to 1.5 times what survived the last full collection
 * (`--heap-growing-percent=50`). A server's live heap is small (40-45 MB through bench:server's
 * soak) and what it allocates per step is garbage soon (docs/performance.md). A
 * `--heap-growing-percent` or `--max-old-space-size` given to node wins.
 */

/** Node flags (command line or NODE_OPTIONS) that size the old generation: given, they are left alone. */
const OLD_GENERATION_FLAGS = /--(heap[-_]growing[-_]percent|max[-_]old[-_]space[-_]size)\b/

const givenToNode = () => [...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((arg) => OLD_GENERATION_FLAGS.test(arg))

export const limitOldGenerationGrowth = (percent: number) => {
  if (!givenToNode()) setFlagsFromString(`--heap-growing-percent=${percent}`)
}

/** Back to V8's default (0: the growth V8 chooses) unless node was given its own (see EngineFlags.ts). */
export const unlimitOldGenerationGrowth = () => {
  if (!givenToNode()) setFlagsFromString("--heap-growing-percent=0")
}
