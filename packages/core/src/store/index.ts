// store/: Storage: the SQLite database, its migrations and WAL checkpoints, and the session store.
// What other subsystems use of it; they import it from here, never from its files.
import type { MessageNotFound, SessionImportError, SessionNotFound } from "@agent/domain"

export * as Database from "./Database.js"
export { filename, openedFile, withBusyRetry } from "./Database.js"
export { SessionStore } from "./SessionStore.js"

/** The errors this subsystem's services fail with. */
export type StoreError = SessionNotFound | MessageNotFound | SessionImportError
