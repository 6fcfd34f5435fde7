import { PerformanceObserver } from "node:perf_hooks"
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"

/**
 * Why: V8's 2 × 16 MB young generation was a fifth of a short `agent run`'s peak memory; 4 MB
 * semi-spaces cost ~0.3% more CPU in collection pauses (1 MB cost ~20% more per step in bench:loop).
 *
 * V8 fixes the maximum at start, so the cap is made from the growth factor (read whenever the
 * young generation grows): it stays at its initial size while the command's modules are
 * evaluated (each evaluation runs to its end without a pause, so growth could not be stopped in
 * the middle of one), then may grow once, to the cap, and no more.
 *
 * `agent serve` is the exception: it grows the young generation as V8 does (to 16 MB). A server
 * holds each session's request for the whole model call (seconds), and with 50 sessions a 4 MB
 * semi-space fills several times while they wait, so it collects three times as often and moves
 * more of what is waiting to the old generation: in bench:server's varied phase 528-530
 * collections and 1.5-1.7 s of pauses instead of 167 and 0.8-0.9 s, and ~1 ms more CPU per step.
 * (The cap is applied by a callback that runs after a collection: it held in `agent run`, but the
 * server had grown to 16 MB after runs of 2 and of 50 sessions, two growths before the callback
 * ran. Asking for V8's growth makes that the rule, not a race.)
 */

const SEMI_SPACE_CAP = 4 * 1024 * 1024

/** V8's own factor: the young generation doubles when it needs to, up to V8's maximum. */
const V8_GROWTH_FACTOR = 2

/** Before anything is loaded: no growth while the modules are evaluated. */
export const holdYoungGeneration = () => {
  setFlagsFromString("--semi-space-growth-factor=1")
}

/** The young generation's semi-space (its size is two of them). */
const semiSpace = () => (getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0) / 2

/** Once the command's modules are loaded: grow once, to the cap (`cap: false`: as V8 grows it). */
export const releaseYoungGeneration = (cap: boolean) => {
  if (!cap) {
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
