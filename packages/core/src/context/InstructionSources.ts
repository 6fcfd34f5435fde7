import { Effect } from "effect"
import * as path from "node:path"
import type { InstanceInfo } from "../runtime/Instance.js"
import type { Entry } from "./InstructionFiles.js"
import { expandGlob } from "./InstructionGlob.js"
import * as InstructionLimits from "./InstructionLimits.js"

// The `instructions` entries of the config: file globs expanded and URLs fetched, once per loader.

const FETCH_TIMEOUT_MS = 5_000

/** The configured files (resolved) and URL contents (fetched, cut to the per-entry cap). */
export interface ConfiguredInstructions {
  readonly files: ReadonlyArray<string>
  readonly urls: ReadonlyArray<Entry>
}

/** The text at `url`, or undefined (with a warning) when it cannot be fetched. */
const fetchUrl = (url: string): Effect.Effect<string | undefined> =>
  Effect.gen(function*() {
    const result = yield* Effect.promise(async (): Promise<{ ok: string } | { error: string }> => {
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) })
        if (!response.ok) return { error: `HTTP ${response.status}` }
        return { ok: (await response.text()).trim() }
      } catch (error) {
        const reason = error instanceof Error && error.name === "TimeoutError"
          ? `no answer within ${FETCH_TIMEOUT_MS / 1000} s`
          : error instanceof Error
          ? (error.cause instanceof Error ? error.cause.message : error.message)
          : String(error)
        return { error: reason }
      }
    })
    if ("error" in result) {
      yield* Effect.logWarning(`instructions: cannot fetch ${url} (${result.error}); skipped`)
      return undefined
    }
    return result.ok
  })

/**
 * Resolves the `instructions` entries: files relative to the project directories (or the global
 * config dir when project config is off), absolute or `~/` paths, and http(s) URLs. The loader
 * runs this once (`Effect.cached`): what it fetched is kept for the loader's life.
 */
export const resolveConfigured = (options: {
  readonly instance: InstanceInfo
  readonly instructions: ReadonlyArray<string>
  readonly limits: InstructionLimits.InstructionLimits
  readonly projectEnabled: boolean
  readonly projectDirs: ReadonlyArray<string>
}): Effect.Effect<ConfiguredInstructions> => {
  const { instance, instructions, limits, projectEnabled, projectDirs } = options

  /** Expands one `instructions` file entry to existing files. */
  const resolveEntry = (entry: string): Effect.Effect<ReadonlyArray<string>> => {
    const expanded = entry === "~" ? instance.home : entry.startsWith("~/") ? path.join(instance.home, entry.slice(2)) : entry
    if (path.isAbsolute(expanded)) return expandGlob(path.normalize(expanded))
    const bases = projectEnabled ? projectDirs : [instance.paths.config]
    return Effect.forEach(bases, (base) => expandGlob(path.join(base, expanded)), { concurrency: "unbounded" }).pipe(
      Effect.map((lists) => lists.flat())
    )
  }

  return Effect.gen(function*() {
    const urlEntries = instructions.filter((entry) => /^https?:\/\//i.test(entry))
    const fileEntries = instructions.filter((entry) => !/^https?:\/\//i.test(entry))
    const [files, urls] = yield* Effect.all([
      Effect.forEach(fileEntries, resolveEntry, { concurrency: "unbounded" }),
      Effect.forEach(urlEntries, (url) => Effect.map(fetchUrl(url), (text) => ({ url, text })), {
        concurrency: "unbounded"
      })
    ], { concurrency: "unbounded" })
    return {
      files: [...new Set(files.flat())],
      // Only what can be sent is kept.
      urls: urls.flatMap(({ text, url }): Array<Entry> =>
        text ? [{ kind: "url", source: url, text: InstructionLimits.headBytes(text, limits.maxBytes), size: Buffer.byteLength(text) }] : []
      )
    }
  }).pipe(Effect.withSpan("InstructionLoader.configured"))
}
