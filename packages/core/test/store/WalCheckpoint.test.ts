import { SqliteClient } from "@effect/sql-sqlite-node"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as WalCheckpoint from "../../src/WalCheckpoint.js"

const tempFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "agent-wal-")), "test.db")
const sizeOf = (file: string) => (fs.existsSync(file) ? fs.statSync(file).size : 0)

/** 3000 rows of 4 KB: 12 MB, far past SQLite's own 1000-page checkpoint threshold. */
const writeRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE IF NOT EXISTS blob (id INTEGER PRIMARY KEY, data TEXT NOT NULL)`
  for (let index = 0; index < 3000; index++) yield* sql`INSERT INTO blob (data) VALUES (${"x".repeat(4096)})`
})

describe("WalCheckpoint", () => {
  it.live("the writing connection never checkpoints; the worker moves the log into the file, and closing removes it", () =>
    Effect.gen(function*() {
      const file = tempFile()
      const client = SqliteClient.layer({ filename: file })
      const layer = WalCheckpoint.layer(file, "300 millis").pipe(Layer.provideMerge(client))
      yield* Effect.gen(function*() {
        yield* writeRows
        // Everything is still in the log: no commit paid for a checkpoint.
        expect(sizeOf(file)).toBeLessThan(1024 * 1024)
        expect(sizeOf(`${file}-wal`)).toBeGreaterThan(12 * 1024 * 1024)
        yield* Effect.sleep("1 second")
        // The worker's checkpoint copied the rows into the database file.
        expect(sizeOf(file)).toBeGreaterThan(12 * 1024 * 1024)
        const sql = yield* SqlClient.SqlClient
        // The log starts over once it has been checkpointed: it stops growing.
        const walBefore = sizeOf(`${file}-wal`)
        yield* writeRows
        yield* Effect.sleep("1 second")
        yield* writeRows
        expect(sizeOf(`${file}-wal`)).toBeLessThanOrEqual(walBefore + 1024 * 1024)
        const [row] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM blob`
        expect(row?.n).toBe(9000)
      }).pipe(Effect.provide(layer), Effect.scoped)
      // the worker closed its connection first, so the main one was the last: no log left behind
      expect(fs.existsSync(`${file}-wal`)).toBe(false)
      fs.rmSync(path.dirname(file), { recursive: true, force: true })
    }), 30_000)

  it.live("without the layer, a commit checkpoints by itself (what the layer takes off the writer)", () =>
    Effect.gen(function*() {
      const file = tempFile()
      yield* writeRows.pipe(
        // control for the test above: the same writes, checkpointed inside commits
        Effect.tap(() => expect(sizeOf(file)).toBeGreaterThan(8 * 1024 * 1024)),
        Effect.provide(SqliteClient.layer({ filename: file })),
        Effect.scoped
      )
      fs.rmSync(path.dirname(file), { recursive: true, force: true })
    }), 30_000)
})
