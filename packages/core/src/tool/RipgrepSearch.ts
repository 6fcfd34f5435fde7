import { spawn } from "node:child_process"
import * as path from "node:path"
import {
  abortable,
  type FilesInput,
  type GrepInput,
  type GrepMatch,
  InvalidPattern,
  listingRoot,
  SearchFailed,
  statOrFail
} from "./FileSearchTypes.js"
import { withGitExcluded } from "./Globs.js"

// The ripgrep engine: `rg --files` and `rg --json`, stopped once the limit is reached.

interface RgRun {
  readonly code: number | null
  readonly stderr: string
  /** We stopped it ourselves (limit reached). */
  readonly stopped: boolean
}

/** Runs rg, feeding complete stdout lines to `onLine`; `onLine` returns false to stop rg. */
const runRipgrep = (
  binary: string,
  args: ReadonlyArray<string>,
  cwd: string,
  env: Record<string, string>,
  signal: AbortSignal,
  onLine: (line: string) => boolean
): Promise<RgRun> =>
  new Promise((resolve, reject) => {
    const child = spawn(binary, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
    let stopped = false
    let pending = ""
    let stderr = ""
    const stop = () => {
      if (stopped) return
      stopped = true
      child.kill("SIGKILL")
    }
    const onAbort = () => stop()
    signal.addEventListener("abort", onAbort)
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      if (stopped) return
      pending += chunk
      let newline = pending.indexOf("\n")
      while (newline !== -1) {
        const line = pending.slice(0, newline)
        pending = pending.slice(newline + 1)
        if (line !== "" && !onLine(line)) {
          stop()
          return
        }
        newline = pending.indexOf("\n")
      }
    })
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk: string) => {
      if (stderr.length < 64_000) stderr += chunk
    })
    child.on("error", (error) => {
      signal.removeEventListener("abort", onAbort)
      reject(new SearchFailed({ detail: `Could not run ripgrep (${binary}): ${error.message}` }))
    })
    child.on("close", (code) => {
      signal.removeEventListener("abort", onAbort)
      if (!stopped && pending !== "") onLine(pending)
      resolve({ code, stderr, stopped })
    })
  })

const globArgs = (globs: ReadonlyArray<string>) => globs.flatMap((glob) => ["--glob", glob])

/**
 * Exit 0 = found, 1 = nothing found, 2 = an error. Unreadable paths also give 2 with partial
 * results (reported as `partial`); anything else is a failure.
 */
const checkRun = (run: RgRun, pattern?: string): boolean => {
  if (run.stopped || run.code === 0 || run.code === 1) return false
  const stderr = run.stderr.trim()
  if (pattern !== undefined && /regex parse error|error parsing regex/i.test(stderr)) {
    // rg prints the pattern with a caret under the problem, then `error: <what>`; the last line says it.
    const reason = /^error: (.*)$/m.exec(stderr)?.[1]
    throw new InvalidPattern({ pattern, detail: reason ?? stderr.replace(/^rg: /, "") })
  }
  const onlyAccessErrors = stderr
    .split("\n")
    .every((line) => line === "" || /permission denied|no such file|os error|io error/i.test(line))
  if (run.code === 2 && onlyAccessErrors) return true
  throw new SearchFailed({ detail: `ripgrep failed (exit ${run.code}): ${stderr}` })
}

export const ripgrepFiles = (binary: string, env: Record<string, string>, input: FilesInput) =>
  abortable(input.signal, async (signal) => {
    const root = await listingRoot(input.cwd)
    const limit = input.limit ?? Number.POSITIVE_INFINITY
    const files: Array<string> = []
    let truncated = false
    let excluded = 0
    const run = await runRipgrep(
      binary,
      ["--files", "--hidden", "--no-config", ...globArgs(withGitExcluded(input.globs)), "--", root],
      root,
      env,
      signal,
      (line) => {
        if (input.exclude?.(line)) {
          excluded++
          return true
        }
        if (files.length >= limit) {
          truncated = true
          return false
        }
        files.push(line)
        return true
      }
    )
    if (signal.aborted) throw new SearchFailed({ detail: "The search was aborted." })
    const partial = checkRun(run)
    return { files, truncated, partial, excluded }
  })

const rgText = (value: { text?: string; bytes?: string } | undefined): string =>
  value?.text ?? (value?.bytes ? Buffer.from(value.bytes, "base64").toString("utf8") : "")

export const ripgrepGrep = (binary: string, env: Record<string, string>, input: GrepInput) =>
  abortable(input.signal, async (signal) => {
    const root = path.resolve(input.cwd)
    const stat = await statOrFail(root)
    const limit = input.limit ?? Number.POSITIVE_INFINITY
    const matches: Array<GrepMatch> = []
    let truncated = false
    const excludedFiles = new Set<string>()
    // Matches come grouped by file: the last file's verdict answers its other matches.
    let last: { readonly file: string; readonly excluded: boolean } | undefined
    const run = await runRipgrep(
      binary,
      [
        "--json",
        "--hidden",
        "--no-config",
        ...globArgs(withGitExcluded(input.globs)),
        "--",
        input.pattern,
        root
      ],
      stat.isDirectory() ? root : path.dirname(root),
      env,
      signal,
      (line) => {
        let event: { type?: string; data?: { path?: { text?: string; bytes?: string }; lines?: { text?: string; bytes?: string }; line_number?: number } }
        try {
          event = JSON.parse(line)
        } catch {
          return true
        }
        if (event.type !== "match" || !event.data) return true
        const file = rgText(event.data.path)
        if (input.exclude !== undefined) {
          if (last?.file !== file) last = { file, excluded: input.exclude(file) }
          if (last.excluded) {
            excludedFiles.add(file)
            return true
          }
        }
        if (matches.length >= limit) {
          truncated = true
          return false
        }
        const text = rgText(event.data.lines).replace(/\r?\n$/, "")
        matches.push({ path: file, line: event.data.line_number ?? 0, text })
        return true
      }
    )
    if (signal.aborted) throw new SearchFailed({ detail: "The search was aborted." })
    const partial = checkRun(run, input.pattern)
    return { matches, truncated, partial, excluded: excludedFiles.size }
  })
