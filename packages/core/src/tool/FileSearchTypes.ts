import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

// What FileSearch takes, returns and fails with (re-exported by FileSearch.ts), and the helpers
// both engines use to run a search as an Effect.

export type Engine = "ripgrep" | "builtin"

export interface FilesInput {
  /** Absolute directory to list. */
  readonly cwd: string
  /** ripgrep-style globs; `!glob` excludes. `.git` is always excluded. */
  readonly globs?: ReadonlyArray<string>
  /** Stop after this many files (the result says whether there were more). */
  readonly limit?: number
  /** Files to leave out (and count), e.g. those the agent may not read; the limit counts only the rest. */
  readonly exclude?: (file: string) => boolean
  readonly signal?: AbortSignal
}

export interface FilesResult {
  /** Absolute paths, in no particular order. */
  readonly files: ReadonlyArray<string>
  readonly truncated: boolean
  /** Some directories could not be read. */
  readonly partial: boolean
  /** Files `exclude` left out (up to where the search stopped). */
  readonly excluded: number
}

export interface GrepInput {
  /** Absolute directory (or single file) to search. */
  readonly cwd: string
  /** A regular expression, matched against each line. */
  readonly pattern: string
  readonly globs?: ReadonlyArray<string>
  /** Stop after this many matching lines. */
  readonly limit?: number
  /** Files whose matches are left out (and counted); the limit counts only the rest. */
  readonly exclude?: (file: string) => boolean
  readonly signal?: AbortSignal
}

export interface GrepMatch {
  /** Absolute path. */
  readonly path: string
  /** 1-based. */
  readonly line: number
  /** The line, without its line ending. */
  readonly text: string
}

export interface GrepResult {
  /** Grouped by file, in line order within a file; files in no particular order. */
  readonly matches: ReadonlyArray<GrepMatch>
  readonly truncated: boolean
  readonly partial: boolean
  /** Files with matches that `exclude` left out. */
  readonly excluded: number
}

/** The regular expression does not compile. */
export class InvalidPattern extends Data.TaggedError("InvalidPattern")<{ readonly pattern: string; readonly detail: string }> {
  override get message() {
    return `Invalid regular expression ${JSON.stringify(this.pattern)}: ${this.detail}`
  }
}

/** The search itself failed (missing directory, ripgrep crashed). */
export class SearchFailed extends Data.TaggedError("SearchFailed")<{ readonly detail: string }> {
  override get message() {
    return this.detail
  }
}

export type FileSearchError = InvalidPattern | SearchFailed

export interface FileSearch {
  readonly engine: Engine
  readonly files: (input: FilesInput) => Effect.Effect<FilesResult, FileSearchError>
  readonly grep: (input: GrepInput) => Effect.Effect<GrepResult, FileSearchError>
}

/** The directory a file listing starts from, resolved; fails naming it when it is missing or not a directory. */
export const listingRoot = async (cwd: string): Promise<string> => {
  const root = path.resolve(cwd)
  const stat = await statOrFail(root)
  if (!stat.isDirectory()) throw new SearchFailed({ detail: `Not a directory: ${root}` })
  return root
}

export const statOrFail = async (target: string): Promise<fs.Stats> => {
  try {
    return await fs.promises.stat(target)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new SearchFailed({
      detail: code === "ENOENT" ? `No such file or directory: ${target}` : `Cannot access ${target}: ${String(error)}`
    })
  }
}

const searchFailure = (error: unknown): FileSearchError =>
  error instanceof SearchFailed || error instanceof InvalidPattern
    ? error
    : new SearchFailed({ detail: error instanceof Error ? error.message : String(error) })

/** Runs `run` with a signal that fires when the fiber is interrupted or `outer` aborts. */
export const abortable = <A>(outer: AbortSignal | undefined, run: (signal: AbortSignal) => Promise<A>) =>
  Effect.tryPromise({
    try: (signal) => run(outer ? AbortSignal.any([outer, signal]) : signal),
    catch: searchFailure
  })
