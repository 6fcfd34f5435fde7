import { Duration, Effect, Layer, Runtime } from "effect"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

/**
 * Checkpoints of the write-ahead log, mostly on a thread of their own.
 *
 * SQLite copies the WAL back into the database file (and syncs it) from inside whichever
 * commit crosses 1000 pages. On the one thread that runs every session of a server, that
 * commit then took 5–25 ms, and every step in flight waited for it. A worker thread with its
 * own connection runs PASSIVE checkpoints, which never block the writers: every 50 ms while
 * the log grows, every half second when it does not. The commit that crosses 1000 pages still
 * checkpoints, as SQLite always does (that is also what lets the next write start the log over,
 * keeping it short for readers), but finds the pages already copied and synced. The worker
 * starts a second after the database opens, so a short command does not pay for it; closing
 * the last connection still checkpoints and removes the WAL.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.module)
const db = new Database(workerData.file, { fileMustExist: true })
let timer
let lastLog = -1
// Soon again while the log grows (a burst of writes), at the idle pace once it is all copied.
const checkpoint = () => {
  let next = workerData.idle
  try {
    const { log, checkpointed } = db.pragma("wal_checkpoint(PASSIVE)")[0]
    if (log !== lastLog || checkpointed < log) next = workerData.busy
    lastLog = log
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) })
  }
  timer = setTimeout(checkpoint, next)
}
checkpoint()
parentPort.on("message", (message) => {
  if (message !== "close") return
  clearTimeout(timer)
  db.close()
  parentPort.postMessage({ closed: true })
})
`

/**
 * better-sqlite3 as @effect/sql-sqlite-node loads it (the same build, in the bundle too). The
 * packed CLI (scripts/pack-cli.mjs) has @effect/sql-sqlite-node inside its bundle and
 * better-sqlite3 as its own dependency, found from here.
 */
const driverPath = () => {
  const fromHere = createRequire(import.meta.url)
  let client: string
  try {
    client = fromHere.resolve("@effect/sql-sqlite-node")
  } catch {
    return fromHere.resolve("better-sqlite3")
  }
  return createRequire(client).resolve("better-sqlite3")
}

/** Asks the worker to close its connection and waits for it to say so. */
const close = (worker: Worker) =>
  Effect.async<void>((resume) => {
    const onMessage = (reply: { readonly closed?: boolean }) => {
      if (reply.closed !== true) return
      worker.off("message", onMessage)
      resume(Effect.void)
    }
    worker.on("message", onMessage)
    worker.postMessage("close")
    return Effect.sync(() => void worker.off("message", onMessage))
  })

/** Checkpoints the database in `file` from a worker thread, for as long as the layer is up. */
export const layer = (
  file: string,
  options: {
    /** Between checkpoints while the log grows (default 50 ms) and while it does not (default 500 ms). */
    readonly busy?: Duration.DurationInput
    readonly idle?: Duration.DurationInput
    readonly startAfter?: Duration.DurationInput
  } = {}
): Layer.Layer<never> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    let worker: Worker | undefined
    // Without the worker the connection's own checkpoints do all the work, as they would anyway.
    const fallBack = (reason: unknown) =>
      Effect.logWarning(`background WAL checkpoints stopped (${String(reason)}); commits checkpoint by themselves`).pipe(
        Effect.zipRight(Effect.sync(() => {
          void worker?.terminate()
          worker = undefined
        }))
      )
    const runtime = yield* Effect.runtime<never>()
    const start = Effect.sync(() => {
      const started = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          file,
          module: driverPath(),
          busy: Duration.toMillis(options.busy ?? "50 millis"),
          idle: Duration.toMillis(options.idle ?? "500 millis")
        }
      })
      started.on("message", (message: { readonly error?: string }) => {
        if (message.error !== undefined) Runtime.runFork(runtime)(Effect.logDebug(`WAL checkpoint: ${message.error}`))
      })
      started.on("error", (error) => Runtime.runFork(runtime)(fallBack(error)))
      started.unref()
      worker = started
    }).pipe(Effect.catchAllDefect(fallBack))
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        const open = worker
        if (!open) return Effect.void
        // Close the worker's connection before the main one, so the main one is the last to close.
        return close(open).pipe(
          Effect.timeout("2 seconds"),
          Effect.ignore,
          Effect.ensuring(Effect.promise(() => open.terminate()))
        )
      })
    )
    yield* start.pipe(
      Effect.delay(options.startAfter ?? "1 second"),
      Effect.catchAllCause(Effect.logError),
      Effect.forkScoped
    )
  }))
