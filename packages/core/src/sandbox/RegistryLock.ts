/**
 * What the placeholder registry (Placeholders.ts) needs from the kernel: a lock that several agent
 * processes of one user share (a directory made with `mkdir`, which is atomic), whether a process is
 * still the one that wrote a file (pid and start time, so a recycled pid does not count), and whether
 * a sandbox still holds bubblewrap's `--lock-file` on a file (`/proc/locks`).
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** A held lock older than this is broken: its holder died between `mkdir` and writing its name, or hangs. */
const LOCK_STALE_MS = 5_000
/** Between attempts at a taken lock. Holders keep it for well under a millisecond (a few syscalls). */
const LOCK_RETRY_MS = 1

const sleepBuffer = new Int32Array(new SharedArrayBuffer(4))
/** A synchronous pause: the registry's work is a handful of syscalls and runs in finalizers and exit handlers too. */
export const pause = (ms: number) => Atomics.wait(sleepBuffer, 0, 0, ms)

/** Field 22 of /proc/<pid>/stat (start time in clock ticks), counted from the last ')' (the name may hold spaces). */
export const startTimeOf = (stat: string): string | undefined => stat.slice(stat.lastIndexOf(")") + 1).trim().split(" ")[19]

export const processStart = (pid: number): string | undefined => {
  try {
    return startTimeOf(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return undefined
  }
}

/** This process, as a manifest or the lock names its writer. */
export const self = (): { readonly pid: number; readonly start: string } => ({ pid: process.pid, start: processStart(process.pid) ?? "" })

/** The process `pid` started at `start` is still running (an unreadable /proc counts as running). */
export const running = (pid: number, start: string): boolean => {
  try {
    return startTimeOf(fs.readFileSync(`/proc/${pid}/stat`, "utf8")) === start
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ENOENT" && (error as NodeJS.ErrnoException).code !== "ESRCH"
  }
}

/**
 * The inodes (`device:inode`, device as `major:minor` in hex as /proc/locks prints it) that some process
 * holds a POSIX lock on; undefined when /proc/locks cannot be read (callers then take every file as locked).
 */
export const lockedInodes = (): Set<string> | undefined => {
  let text: string
  try {
    text = fs.readFileSync("/proc/locks", "utf8")
  } catch {
    return undefined
  }
  const found = new Set<string>()
  for (const line of text.split("\n")) {
    const word = line.split(/\s+/).find((part) => /^[0-9a-f]+:[0-9a-f]+:\d+$/.test(part))
    if (word === undefined) continue
    const [major, minor, inode] = word.split(":") as [string, string, string]
    found.add(`${parseInt(major, 16)}:${parseInt(minor, 16)}:${inode}`)
  }
  return found
}

/** `major:minor:inode` of a file, in decimal, as `lockedInodes` lists it. */
export const inodeKey = (stat: fs.BigIntStats): string => {
  const dev = stat.dev
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn)
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn)
  return `${major}:${minor}:${stat.ino}`
}

/**
 * Runs `body` while holding the lock `dir/lock`, shared by every process that uses `dir`. The lock is a
 * symbolic link whose target names its holder (pid and start time): made in one atomic call and removed
 * in one, where a directory with a file in it took four metadata writes (3.5 ms on this VM's disk). A
 * holder that is gone, or a lock older than LOCK_STALE_MS, is broken.
 */
export const withLock = <A>(dir: string, body: () => A): A => {
  const lock = path.join(dir, "lock")
  const me = self()
  for (;;) {
    try {
      fs.symlinkSync(`${me.pid} ${me.start}`, lock)
      break
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      // The directory went (a temp cleaner): made again, as Placeholders.directory makes it.
      if (code === "ENOENT") {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        continue
      }
      if (code !== "EEXIST") throw error
    }
    if (lockIsStale(lock)) {
      fs.rmSync(lock, { recursive: true, force: true })
      continue
    }
    pause(LOCK_RETRY_MS)
  }
  try {
    return body()
  } finally {
    fs.rmSync(lock, { force: true })
  }
}

const lockIsStale = (lock: string): boolean => {
  try {
    const stat = fs.lstatSync(lock)
    if (Date.now() - stat.mtimeMs > LOCK_STALE_MS) return true
    // A directory: a lock of an earlier version of this registry, broken by age alone.
    if (!stat.isSymbolicLink()) return false
    const [pid, start] = fs.readlinkSync(lock).trim().split(/\s+/)
    return pid !== undefined && start !== undefined && start !== "" && !running(Number(pid), start)
  } catch {
    // Gone: take it again at once.
    return false
  }
}
