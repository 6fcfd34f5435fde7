import { SqliteClient } from "@effect/sql-sqlite-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as WalCheckpoint from "../../src/store/WalCheckpoint.js"

const tempFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-wal-")), "test.db")
const sizeOf = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0)

const writeRows = (rows: number, size: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS blob (id INTEGER PRIMARY KEY, data TEXT NOT NULL)`
    for (let index = 0; index < rows; index++) yield* sql`INSERT INTO blob (data) VALUES (${"x".repeat(size)})`
  })

describe("WalCheckpoint", () => {
  it.live("the worker copies the log into the database file while nobody writes; closing leaves no log behind", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const layer = WalCheckpoint.layer(file, { startAfter: "2 seconds" }).pipe(Layer.provideMerge(SqliteClient.layer({ filename: file })))
      yield* Effect.gen(function*() {
        // 300 KB: under the 1000 pages at which a commit checkpoints by itself
        yield* writeRows(300, 1000)
        expect(sizeOf(file)).toBeLessThan(100 * 1024)
        yield* Effect.sleep("3 seconds")
        expect(sizeOf(file)).toBeGreaterThan(300 * 1000)
        // bursts far past 1000 pages: the log still starts over instead of growing with them
        yield* writeRows(3000, 4096)
        yield* writeRows(6000, 4096)
        // The 9000 rows take two pages each: a log that never started over would hold ~74 MB of frames.
        // A quiet machine ends at 4–6 MB; on a loaded one the worker's checkpoint runs long, the writer's
        // own cannot run meanwhile, and the log grows further (14 MB once in CI) before starting over.
        expect(sizeOf(`${file}-wal`)).toBeLessThan(32 * 1024 * 1024)
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM blob`
        expect(row?.n).toBe(9300)
      }).pipe(Effect.provide(layer), Effect.scoped)
      // the worker closed its connection first, so the main one was the last: the WAL is gone
      expect(fs.existsSync(`${file}-wal`)).toBe(false)
      fs.rmSync(path.dirname(file), { recursive: true, force: true })
    }), 60_000)

  it.live("without the worker the same small write stays in the log (what the test above relies on)", () =>
    Effect.gen(function*() {
      const file = tempFile()
      yield* writeRows(300, 1000).pipe(
        Effect.zipRight(Effect.sleep("1 second")),
        Effect.tap(() => expect(sizeOf(file)).toBeLessThan(100 * 1024)),
        Effect.provide(SqliteClient.layer({ filename: file })),
        Effect.scoped
      )
      fs.rmSync(path.dirname(file), { recursive: true, force: true })
    }), 30_000)
})
