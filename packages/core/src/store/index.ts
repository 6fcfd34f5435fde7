// store/: Storage: the SQLite database, its migrations and WAL checkpoints, and the session store.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { MessageNotFound, SessionImportError, SessionNotFound } from "@agent/domain"

export * as Database from "./Database.js"
export { filename, openedFile, withBusyRetry } from "./Database.js"
export { SessionStore } from "./SessionStore.js"
export { EventLog } from "./EventLog.js"

/** The errors this subsystem's services fail with. */
export type StoreError = SessionNotFound | MessageNotFound | SessionImportError
