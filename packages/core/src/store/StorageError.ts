/** A fault of the database itself (cannot open, locked, unreachable), naming the file or server. */
export class StorageError extends Error {
  override readonly name = "StorageError"
  constructor(readonly file: string, readonly detail: string, override readonly cause?: unknown) {
    super(`storage error in ${file}: ${detail}`)
  }
}
