import type { Part } from "@agent/domain"
import { Effect, Schedule } from "effect"
import * as os from "node:os"
import { isAlive } from "../runtime/Pid.js"
import { isReadOnly } from "./Database.js"
import type { StoreDeps } from "./SessionStoreState.js"
import { type DataRow, decodePart, decodeRow, newRev } from "./StoreRows.js"

// Leases and crash recovery: each writing process holds a lease with a heartbeat, and tool calls
// left pending or running by a process that died are marked as interrupted.

/** A lease whose heartbeat is older than this belongs to a dead process. */
const LEASE_STALE_MS = 30_000
const LEASE_HEARTBEAT = "5 seconds"

/** One beat. Suspended: a statement's values are fixed when it is built, and each beat must write the time it runs. */
const heartbeat = ({ sql, write, owner }: StoreDeps) =>
  Effect.suspend(() =>
    write(
      sql`INSERT INTO lease (owner, pid, host, heartbeat) VALUES (${owner}, ${process.pid}, ${os.hostname()}, ${Date.now()})
        ON CONFLICT(owner) DO UPDATE SET heartbeat = excluded.heartbeat`
    )
  )

/** A tool call left pending or running, as interrupted (the model is told so when the run resumes). */
const interruptedPart = (part: Part, now: number): Part | undefined => {
  if (part.type !== "tool" || (part.state.status !== "pending" && part.state.status !== "running")) return undefined
  const start = part.state.status === "running" ? part.state.time.start : now
  return {
    ...part,
    state: {
      status: "error",
      input: part.state.input,
      error: "Tool execution was interrupted",
      metadata: { ...(part.state.status === "running" ? part.state.metadata : {}), interrupted: true },
      time: { start, end: now }
    }
  }
}

/**
 * Marks the session's tool calls that another process left pending or running as interrupted: the
 * caller has taken the session over (a replica that now owns it, its previous owner dead or gone),
 * so those calls will never finish. Returns how many it marked; each is published as an update.
 */
export const takeOver = (deps: StoreDeps, sessionID: string, publish: (part: Part) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const { sql, read, write, owner } = deps
    const open = yield* read(
      sql<DataRow & { owner: string | null }>`SELECT id, data, owner FROM part WHERE session_id = ${sessionID} AND status IN ('pending', 'running')`
    )
    const now = Date.now()
    const marked: Array<Part> = []
    for (const row of open) {
      if (row.owner === owner) continue
      const part = interruptedPart(decodeRow("part", row.id, decodePart, row.data), now)
      if (!part) continue
      yield* write(sql`UPDATE part SET data = ${JSON.stringify(part)}, rev = ${newRev()}, status = 'error', owner = NULL WHERE id = ${row.id}`)
      marked.push(part)
    }
    yield* Effect.forEach(marked, publish, { discard: true })
    return marked.length
  })

const recoverInterrupted = ({ sql, read, write, owner }: StoreDeps) =>
  Effect.gen(function*() {
    const leases = yield* read(sql<{ owner: string; pid: number; host: string; heartbeat: number }>`SELECT * FROM lease`)
    const now = Date.now()
    const dead = new Set(
      leases
        .filter((lease) =>
          lease.owner !== owner &&
          (now - lease.heartbeat > LEASE_STALE_MS || (lease.host === os.hostname() && !isAlive(lease.pid)))
        )
        .map((lease) => lease.owner)
    )
    const live = new Set(leases.map((lease) => lease.owner).filter((id) => !dead.has(id)))
    const open = yield* read(
      sql<DataRow & { owner: string | null }>`SELECT id, data, owner FROM part WHERE status IN ('pending', 'running')`
    )
    const orphans = open.filter((row) => row.owner === null || !live.has(row.owner))
    if (orphans.length === 0 && dead.size === 0) return
    yield* write(
      sql.withTransaction(
        Effect.gen(function*() {
          for (const row of orphans) {
            const interrupted = interruptedPart(decodeRow("part", row.id, decodePart, row.data), now)
            if (!interrupted) continue
            yield* sql`UPDATE part SET data = ${JSON.stringify(interrupted)}, rev = ${newRev()}, status = 'error', owner = NULL WHERE id = ${row.id}`
          }
          if (dead.size > 0) yield* sql`DELETE FROM lease WHERE ${sql.in("owner", [...dead])}`
        })
      )
    )
    if (orphans.length > 0) yield* Effect.logInfo(`marked ${orphans.length} tool call(s) of dead processes as interrupted`)
  })

/**
 * Takes this process's lease, recovers what dead processes left, and keeps the lease alive for the
 * life of the scope. A store that only reads (Database.layerReadOnly) runs nothing, so it holds no
 * lease and leaves the recovery to the next process that writes.
 */
export const holdLease = (deps: StoreDeps) =>
  Effect.gen(function*() {
    if (yield* isReadOnly) return
    const { sql, write, owner } = deps
    yield* heartbeat(deps)
    yield* recoverInterrupted(deps)
    // A beat that fails (the file locked for a long time) is logged and the next one tried: a
    // heartbeat that stopped for good would let other processes take this one's calls for dead.
    yield* Effect.forkScoped(
      heartbeat(deps).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("session store heartbeat failed; trying again", cause)),
        Effect.repeat(Schedule.spaced(LEASE_HEARTBEAT))
      )
    )
    yield* Effect.addFinalizer(() => write(sql`DELETE FROM lease WHERE owner = ${owner}`).pipe(Effect.ignore))
  })
