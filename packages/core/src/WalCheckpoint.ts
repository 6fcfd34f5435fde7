import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, Layer, Schedule } from "effect"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

/**
 * Checkpoints of the write-ahead log, on a thread of their own.
 *
 * SQLite copies the WAL back into the database file (and syncs it) from inside whichever
 * commit crosses 1000 pages. On the one thread that runs every session of a server, that
 * commit then took 5–25 ms, and every step in flight waited for it. Here the connection
 * never checkpoints by itself; a worker thread with its own connection runs a PASSIVE
 * checkpoint every couple of seconds, which never blocks the writers. The worker starts at
 * the first tick, so a short command does not pay for it; closing the last connection still
 * checkpoints and removes the WAL, as SQLite always does.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.module)
const db = new Database(workerData.file, { fileMustExist: true })
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close()
    parentPort.postMessage({ closed: true })
    return
  }
  try {
    parentPort.postMessage({ result: db.pragma("wal_checkpoint(PASSIVE)")[0] })
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) })
  }
})
`

/** better-sqlite3 as @effect/sql-sqlite-node loads it (the same build, in the bundle too). */
const driverPath = () => {
  const fromHere = createRequire(import.meta.url)
  return createRequire(fromHere.resolve("@effect/sql-sqlite-node")).resolve("better-sqlite3")
}

type Reply = { readonly result?: unknown; readonly error?: string; readonly closed?: boolean }

/** Sends `message` and waits for the reply to it (an interrupted checkpoint's late reply is skipped). */
const ask = (worker: Worker, message: "checkpoint" | "close") =>
  Effect.async<Reply, Error>((resume) => {
    const onMessage = (reply: Reply) => {
      if ((message === "close") !== (reply.closed === true)) return
      worker.off("message", onMessage)
      worker.off("error", onError)
      resume(Effect.succeed(reply))
    }
    const onError = (error: Error) => {
      worker.off("message", onMessage)
      resume(Effect.fail(error))
    }
    worker.on("message", onMessage)
    worker.once("error", onError)
    worker.postMessage(message)
    return Effect.sync(() => {
      worker.off("message", onMessage)
      worker.off("error", onError)
    })
  })

/** Takes checkpoints away from the connection in `SqlClient` and runs them on a worker thread. */
export const layer = (file: string, every: Duration.DurationInput = "2 seconds"): Layer.Layer<never, never, SqlClient.SqlClient> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`PRAGMA wal_autocheckpoint = 0`.pipe(Effect.orDie)
    let worker: Worker | undefined
    let running = true
    // If the worker cannot run, the connection goes back to checkpointing by itself.
    const fallBack = (reason: unknown) =>
      Effect.logWarning(`background WAL checkpoints stopped (${String(reason)}); the connection checkpoints by itself again`).pipe(
        Effect.zipRight(sql`PRAGMA wal_autocheckpoint = 1000`.pipe(Effect.ignore)),
        Effect.zipRight(Effect.sync(() => {
          running = false
          void worker?.terminate()
          worker = undefined
        }))
      )
    const checkpoint = Effect.gen(function*() {
      worker ??= new Worker(WORKER_SOURCE, { eval: true, workerData: { file, module: driverPath() } })
      const reply = yield* ask(worker, "checkpoint")
      if (reply.error !== undefined) yield* Effect.logDebug(`WAL checkpoint: ${reply.error}`)
    }).pipe(Effect.catchAllDefect(fallBack), Effect.catchAll(fallBack))
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        const open = worker
        if (!open) return Effect.void
        // Close the worker's connection before the main one, so the main one is the last to close.
        return ask(open, "close").pipe(
          Effect.timeout("2 seconds"),
          Effect.ignore,
          Effect.ensuring(Effect.promise(() => open.terminate()))
        )
      })
    )
    yield* checkpoint.pipe(
      Effect.delay(every),
      Effect.repeat({ schedule: Schedule.spaced(every), while: () => running }),
      Effect.catchAllCause(Effect.logError),
      Effect.forkScoped
    )
  }))
