// `agent acp`'s stdout as the SDK's web stream, written off the JavaScript thread. A write to a
// pipe wakes the editor's reader, and the kernel often runs the reader at once on the writer's
// core, in the writer's place, while it handles the message (docs/performance.md, "ACP"): written
// from libuv's thread pool, that wait falls on a pool thread and the run goes on. Writes are one at
// a time, in order, and what arrives meanwhile goes out together in the next one.
import * as fs from "node:fs"

export interface BatchedOutput {
  readonly stream: WritableStream<Uint8Array>
  /** Settles once everything written so far is out (or the output failed): wait for it before exiting. */
  readonly flushed: () => Promise<void>
}

/** Bytes waiting behind the write in progress before a writer is held back (an editor that stopped reading). */
const PENDING_LIMIT = 1024 * 1024

/** Output to the file descriptor `fd` (a pipe, a file). */
export const batchedOutput = (fd: number): BatchedOutput => {
  let pending: Array<Uint8Array> = []
  let pendingBytes = 0
  /** Writers held back until the pending bytes go out. */
  let held: Array<() => void> = []
  let writing = false
  let failed: Error | undefined
  /** Waiting for the output to be idle: nothing pending, nothing being written. */
  let waiters: Array<() => void> = []
  let fail: (error: Error) => void = () => {}

  const settle = () => {
    const ready = waiters
    waiters = []
    for (const resolve of ready) resolve()
  }
  const release = () => {
    const ready = held
    held = []
    for (const resolve of ready) resolve()
  }

  const next = () => {
    if (failed !== undefined || pending.length === 0) {
      writing = false
      return settle()
    }
    writing = true
    const chunk = pending.length === 1 ? pending[0]! : Buffer.concat(pending)
    pending = []
    pendingBytes = 0
    release()
    writeFrom(chunk, 0)
  }

  /** `retry`: ms to wait if the pipe is still full, doubled each time up to 50 (an editor that stopped reading). */
  const writeFrom = (chunk: Uint8Array, offset: number, retry = 1): void =>
    fs.write(fd, chunk, offset, chunk.length - offset, null, (error, written) => {
      // Node made the pipe non-blocking when it opened process.stdout: a full pipe says EAGAIN.
      if (error?.code === "EAGAIN") return void setTimeout(() => writeFrom(chunk, offset, Math.min(50, retry * 2)), retry)
      if (error) return fail(error)
      if (offset + written < chunk.length) return writeFrom(chunk, offset + written)
      next()
    })

  const stream = new WritableStream<Uint8Array>({
    start(controller) {
      // The editor gone (EPIPE): the connection sees the stream fail instead of the process crashing.
      fail = (error) => {
        failed = error
        pending = []
        pendingBytes = 0
        writing = false
        controller.error(error)
        release()
        settle()
      }
    },
    write(chunk) {
      if (failed !== undefined) return Promise.reject(failed)
      pending.push(chunk)
      pendingBytes += chunk.length
      if (!writing) {
        writing = true
        setImmediate(next)
      }
      if (pendingBytes >= PENDING_LIMIT) return new Promise<void>((resolve) => held.push(resolve))
    },
    close: () => flushed()
  })

  // The stream hands its queued chunks to `write` in microtasks: after a macrotask they are all here.
  const flushed = () => new Promise<void>((resolve) => setImmediate(() => (writing ? waiters.push(resolve) : resolve())))
  return { stream, flushed }
}
