import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/**
 * The first schema. Sessions, messages and parts keep their full domain object as JSON in
 * `data` (decoded with the domain schemas on read) plus the columns the queries need.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE project (
    id TEXT PRIMARY KEY,
    worktree TEXT NOT NULL,
    vcs INTEGER NOT NULL,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL
  )`
  yield* sql`CREATE TABLE session (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    parent_id TEXT REFERENCES session(id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    directory TEXT NOT NULL,
    title TEXT NOT NULL,
    version TEXT NOT NULL,
    agent TEXT,
    model TEXT,
    permission TEXT,
    summary TEXT,
    revert TEXT,
    share_url TEXT,
    cost REAL NOT NULL DEFAULT 0,
    tokens_input INTEGER NOT NULL DEFAULT 0,
    tokens_output INTEGER NOT NULL DEFAULT 0,
    tokens_reasoning INTEGER NOT NULL DEFAULT 0,
    tokens_cache_read INTEGER NOT NULL DEFAULT 0,
    tokens_cache_write INTEGER NOT NULL DEFAULT 0,
    time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL,
    time_compacting INTEGER,
    time_archived INTEGER
  )`
  yield* sql`CREATE INDEX session_roots ON session (project_id, id) WHERE parent_id IS NULL`
  yield* sql`CREATE INDEX session_parent ON session (parent_id)`
  yield* sql`CREATE TABLE message (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    time_created INTEGER NOT NULL,
    data TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX message_session ON message (session_id, id)`
  yield* sql`CREATE TABLE part (
    id TEXT PRIMARY KEY,
    message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    type TEXT NOT NULL,
    status TEXT,
    owner TEXT,
    data TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX part_session ON part (session_id, message_id, id)`
  yield* sql`CREATE INDEX part_message ON part (message_id, id)`
  yield* sql`CREATE INDEX part_open ON part (status) WHERE status IN ('pending', 'running')`
  yield* sql`CREATE TABLE todo (
    session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    priority TEXT NOT NULL,
    PRIMARY KEY (session_id, position)
  )`
  yield* sql`CREATE TABLE permission_approval (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL,
    permission TEXT NOT NULL,
    pattern TEXT NOT NULL,
    action TEXT NOT NULL,
    time_created INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX permission_approval_project ON permission_approval (project_id, id)`
  yield* sql`CREATE TABLE lease (
    owner TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    heartbeat INTEGER NOT NULL
  )`
})
