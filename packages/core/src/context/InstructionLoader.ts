import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { isEnvFlag } from "../config/ConfigFiles.js"
import { ConfigService } from "../config/ConfigService.js"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import * as InstructionLimits from "./InstructionLimits.js"
import { isWithin as within } from "../tool/ExternalDirectory.js"

/** One entry of the system prompt's instructions: a file, or an http(s) URL. */
export interface InstructionSource {
  readonly source: string
  readonly kind: "file" | "url"
}

/** What a read brought along: the reminder to append and the files in it. */
export interface AttachedInstructions {
  readonly reminder: string
  readonly files: ReadonlyArray<string>
}

/**
 * Instruction files for the system prompt and for files the agent reads.
 *
 * `system()` entries, in this order (each `Instructions from: <path or url>\n<content>`):
 * 1. the global file: `<config dir>/AGENTS.md`, else `~/.claude/CLAUDE.md`;
 * 2. the project files: `AGENTS.md` in every directory from the work-tree root down to the
 *    working directory; only when there is none, `CLAUDE.md` likewise; else `CONTEXT.md`;
 * 3. the `instructions` config entries that are files (globs relative to the project, tried in
 *    every directory from the working directory up to the root; absolute paths; `~/` paths);
 * 4. the `instructions` entries that are http(s) URLs.
 *
 * With `AGENT_DISABLE_PROJECT_CONFIG` set, no project files are used (nor attached by
 * `forRead`), and relative `instructions` entries are taken from the global config dir.
 *
 * Files are re-checked every step with a `stat` and re-read only when their mtime or size
 * changed, so an edited AGENTS.md shows up at the next step. Each file or URL is cut to
 * `instruction_limits.max_bytes`, all of them together to `max_total_bytes` (see
 * InstructionLimits.ts), with a note in the text and a warning, once per file, in the log. Globs are expanded and URLs
 * fetched once per loader (in the background from layer build); a URL's content is then
 * kept for the life of the process.
 */
export interface InstructionLoaderShape {
  /** The instruction entries for the system prompt of the next step. */
  readonly system: () => Effect.Effect<ReadonlyArray<string>>
  /** The instruction files (not URLs) that `system()` currently includes. */
  readonly files: () => Effect.Effect<ReadonlyArray<string>>
  /** Where `system()`'s entries come from, in order: files, then fetched URLs. */
  readonly sources: () => Effect.Effect<ReadonlyArray<InstructionSource>>
  /**
   * After a `read` of `filePath`: the instruction files of the directories between the file and
   * the project root (in each directory the first of AGENTS.md, CLAUDE.md, CONTEXT.md; nearest
   * first) that are neither in the system prompt nor already attached in this `scope`, wrapped
   * in one `<system-reminder>` for the read tool to append to its output; undefined when there
   * is nothing new.
   *
   * The scope is the session. OpenCode claims a file per message and skips files that an
   * earlier, still visible read result carries; here the claim lasts while that read result is
   * in the model's view, and `release` ends it when the result is summarized or pruned away, so
   * the next read in that package brings the file again.
   */
  readonly forRead: (input: { readonly scope: string; readonly filePath: string }) => Effect.Effect<AttachedInstructions | undefined>
  /** The model no longer sees these attached files (compaction, prune): a later read attaches them again. */
  readonly release: (input: { readonly scope: string; readonly files: ReadonlyArray<string> }) => Effect.Effect<void>
  /** The files attached to reads in `scope` that the model still sees, in the order they came. */
  readonly attached: (scope: string) => Effect.Effect<ReadonlyArray<string>>
}

export class InstructionLoader extends Context.Tag("@agent/core/InstructionLoader")<
  InstructionLoader,
  InstructionLoaderShape
>() {
  static readonly layer: Layer.Layer<InstructionLoader, never, Instance | ConfigService> = Layer.scoped(
    InstructionLoader,
    Effect.gen(function*() {
      const instance = yield* Instance
      const config = yield* (yield* ConfigService).get()
      const loader = makeLoader(instance, config.instructions ?? [], InstructionLimits.fromConfig(config.instruction_limits))
      const configured = yield* Effect.cached(loader.configured)
      // Start expanding globs and fetching URLs now, so the first step rarely waits for them.
      yield* Effect.forkScoped(configured.pipe(Effect.catchAllCause(Effect.logError)))
      return loader.service(configured)
    })
  )
}

/** Project files that hold instructions; the first name found anywhere on the path wins. */
export const PROJECT_FILES = ["AGENTS.md", "CLAUDE.md", "CONTEXT.md"] as const

const FETCH_TIMEOUT_MS = 5_000
/** Sessions whose attached files are remembered; older claim sets are dropped. */
const CLAIM_SCOPES = 200

/** URL contents fetched by any loader in this process. */
const urlCache = new Map<string, string>()



/** Directories from `start` up to `stop` (inclusive), nearest first; just `start` when outside `stop`. */
const upward = (start: string, stop: string): Array<string> => {
  if (!within(start, stop)) return [start]
  const dirs: Array<string> = []
  for (let dir = start; ; dir = path.dirname(dir)) {
    dirs.push(dir)
    if (dir === stop || path.dirname(dir) === dir) break
  }
  return dirs
}

const formatEntry = (source: string, text: string): string => `Instructions from: ${source}\n${text}`

interface Entry extends InstructionLimits.Sized {
  readonly kind: "file" | "url"
}

/** The first `bytes` bytes of a file (a huge AGENTS.md is never read whole). */
const readHead = (file: string, bytes: number): string => {
  const fd = fs.openSync(file, "r")
  try {
    const buffer = Buffer.alloc(bytes)
    return buffer.subarray(0, fs.readSync(fd, buffer, 0, bytes, 0)).toString("utf8")
  } finally {
    fs.closeSync(fd)
  }
}

const makeLoader = (instance: InstanceInfo, instructions: ReadonlyArray<string>, limits: InstructionLimits.InstructionLimits) => {
  const projectEnabled = !isEnvFlag(instance.env.AGENT_DISABLE_PROJECT_CONFIG)
  const projectDirs = upward(instance.directory, instance.worktree)

  // --- file contents, keyed by path and validated by (mtimeMs, size) ------------------------
  const contents = new Map<string, { readonly mtimeMs: number; readonly size: number; readonly text: string }>()

  /**
   * The trimmed text of `file` (of its first `limits.maxBytes` bytes when it is larger) and its
   * size, or undefined when it is not a readable file.
   */
  // Checked every step, so synchronous: a stat is microseconds, a thread-pool round trip is not.
  const readFileSync = (file: string): { readonly text: string; readonly size: number } | undefined => {
    {
      let stat: fs.Stats | undefined
      try {
        // No exception for the usual case, a file that does not exist.
        stat = fs.statSync(file, { throwIfNoEntry: false })
      } catch {
        stat = undefined
      }
      if (!stat?.isFile()) {
        contents.delete(file)
        return undefined
      }
      const cached = contents.get(file)
      if (cached !== undefined && cached.mtimeMs === stat.mtimeMs && cached.size === stat.size) return cached
      let raw: string
      try {
        raw = stat.size > limits.maxBytes ? readHead(file, limits.maxBytes) : fs.readFileSync(file, "utf8")
      } catch {
        return undefined
      }
      const text = (raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw).trim()
      const read = { mtimeMs: stat.mtimeMs, size: stat.size, text }
      contents.set(file, read)
      return read
    }
  }

  const isFileSync = (file: string): boolean => {
    try {
      return fs.statSync(file, { throwIfNoEntry: false })?.isFile() ?? false
    } catch {
      return false
    }
  }

  // --- configured entries, resolved once ------------------------------------------------------

  const fetchUrl = (url: string): Effect.Effect<string | undefined> =>
    Effect.gen(function*() {
      const cached = urlCache.get(url)
      if (cached !== undefined) return cached
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
      urlCache.set(url, result.ok)
      return result.ok
    })

  /** Expands one `instructions` file entry to existing files. */
  const resolveEntry = (entry: string): Effect.Effect<ReadonlyArray<string>> => {
    const expanded = entry === "~" ? instance.home : entry.startsWith("~/") ? path.join(instance.home, entry.slice(2)) : entry
    if (path.isAbsolute(expanded)) return expandGlob(path.normalize(expanded))
    const bases = projectEnabled ? projectDirs : [instance.paths.config]
    return Effect.forEach(bases, (base) => expandGlob(path.join(base, expanded)), { concurrency: "unbounded" }).pipe(
      Effect.map((lists) => lists.flat())
    )
  }

  /** Configured files (resolved once) and URL contents (fetched once). */
  const configured: Effect.Effect<{ readonly files: ReadonlyArray<string>; readonly urls: ReadonlyArray<Entry> }> = Effect.gen(
    function*() {
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
        // Kept whole in the process's URL cache; only what can be sent is kept here.
        urls: urls.flatMap(({ text, url }): Array<Entry> =>
          text ? [{ kind: "url", source: url, text: InstructionLimits.headBytes(text, limits.maxBytes), size: Buffer.byteLength(text) }] : []
        )
      }
    }
  ).pipe(Effect.withSpan("InstructionLoader.configured"))

  // --- per step -------------------------------------------------------------------------------

  const globalFile = (): string | undefined =>
    [path.join(instance.paths.config, "AGENTS.md"), path.join(instance.home, ".claude", "CLAUDE.md")].find(isFileSync)

  /** The project files of the first name with any hit, work-tree root first. */
  const projectFiles = (): ReadonlyArray<string> => {
    if (!projectEnabled) return []
    const rootFirst = [...projectDirs].reverse()
    for (const name of PROJECT_FILES) {
      const hits = rootFirst.map((dir) => path.join(dir, name)).filter(isFileSync)
      if (hits.length > 0) return hits
    }
    return []
  }

  /** Files and URLs already reported as cut: each is warned about once. */
  const reported = new Set<string>()
  const report = (cuts: ReadonlyArray<InstructionLimits.Cut>) =>
    Effect.forEach(cuts, (cut) => {
      if (reported.has(cut.source)) return Effect.void
      reported.add(cut.source)
      return Effect.logWarning(`instructions: ${cut.source} has ${cut.size} bytes; only its first ${cut.kept} are sent (${cut.limit})`)
    }, { discard: true })

  /** The entries as they are sent: fitted into the caps, the cuts reported. */
  const fitted = (entries: ReadonlyArray<Entry>, maxTotalBytes = limits.maxTotalBytes) =>
    Effect.gen(function*() {
      const fit = InstructionLimits.fit(entries, { ...limits, maxTotalBytes })
      if (fit.cuts.length > 0) yield* report(fit.cuts)
      return fit.entries
    })

  const collect = (configuredOnce: typeof configured): Effect.Effect<ReadonlyArray<Entry>> =>
    Effect.gen(function*() {
      const resolved = yield* configuredOnce
      const global = globalFile()
      const project = projectFiles()
      const paths = [...new Set([...(global ? [global] : []), ...project, ...resolved.files])]
      const files = paths.flatMap((file): Array<Entry> => {
        const read = readFileSync(file)
        return read?.text ? [{ kind: "file", source: file, text: read.text, size: read.size }] : []
      })
      return yield* fitted([...files, ...resolved.urls])
    })

  const service = (configuredOnce: typeof configured): InstructionLoaderShape => {
    const claims = new Map<string, Set<string>>()
    const claimsOf = (scope: string): Set<string> => {
      let set = claims.get(scope)
      if (set === undefined) {
        set = new Set()
        claims.set(scope, set)
        if (claims.size > CLAIM_SCOPES) claims.delete(claims.keys().next().value!)
      }
      return set
    }

    return {
      // Called every step (or every tool call): untraced, a span would cost more than the call.
      system: Effect.fnUntraced(function*() {
        const entries = yield* collect(configuredOnce)
        return entries.map((entry) => formatEntry(entry.source, entry.text))
      }),
      files: Effect.fn("InstructionLoader.files")(function*() {
        const entries = yield* collect(configuredOnce)
        return entries.filter((entry) => entry.kind === "file").map((entry) => entry.source)
      }),
      sources: Effect.fn("InstructionLoader.sources")(function*() {
        const entries = yield* collect(configuredOnce)
        return entries.map((entry) => ({ source: entry.source, kind: entry.kind }))
      }),
      release: Effect.fn("InstructionLoader.release")(function*(input) {
        const claimed = claims.get(input.scope)
        if (claimed === undefined) return
        yield* Effect.sync(() => {
          for (const file of input.files) claimed.delete(file)
        })
      }),
      attached: Effect.fn("InstructionLoader.attached")(function*(scope) {
        return [...(claims.get(scope) ?? [])]
      }),
      forRead: Effect.fn("InstructionLoader.forRead")(function*(input) {
        const target = path.resolve(instance.directory, input.filePath)
        if (!projectEnabled || !within(target, instance.worktree)) return undefined
        const loaded = new Set((yield* collect(configuredOnce)).map((entry) => entry.source))
        // One instruction file per directory (same name preference as the project files), found
        // and claimed in one synchronous block, so two reads of the same message cannot both
        // attach a file (and a few stat calls need no fiber each).
        const picked = yield* Effect.sync(() => {
          const claimed = claimsOf(input.scope)
          const out: Array<string> = []
          for (const dir of upward(path.dirname(target), instance.worktree)) {
            const file = PROJECT_FILES.map((name) => path.join(dir, name)).find(isFileSync)
            if (file === undefined || file === target || loaded.has(file) || claimed.has(file)) continue
            claimed.add(file)
            out.push(file)
          }
          return out
        })
        if (picked.length === 0) return undefined
        const found = picked.map((file) => ({ file, read: readFileSync(file) }))
        // An empty file attaches nothing, so it is not claimed either.
        const attached = yield* Effect.sync(() =>
          found.flatMap(({ file, read }): Array<Entry> => {
            if (read?.text) return [{ kind: "file", source: file, text: read.text, size: read.size }]
            claimsOf(input.scope).delete(file)
            return []
          })
        )
        if (attached.length === 0) return undefined
        // Each file within its own cap; the total cap is the system prompt's.
        const blocks = (yield* fitted(attached, Number.POSITIVE_INFINITY)).map((entry) => formatEntry(entry.source, entry.text))
        return { reminder: `<system-reminder>\n${blocks.join("\n\n")}\n</system-reminder>`, files: attached.map((entry) => entry.source) }
      })
    }
  }

  return { configured, service }
}

// ---------------------------------------------------------------------------------------------
// A small glob: `*` and `?` within one path segment, `**` for any number of segments, `{a,b}`
// alternatives. Enough for `instructions` entries; `.git` and `node_modules` are not entered.

const MAGIC = /[*?{[]/
const SKIP_DIRS: ReadonlySet<string> = new Set([".git", "node_modules"])
const MAX_MATCHES = 1_000

const segmentRegex = (segment: string): RegExp => {
  let out = ""
  let inBraces = false
  for (const char of segment) {
    if (char === "*") out += "[^/]*"
    else if (char === "?") out += "[^/]"
    else if (char === "{") {
      out += "(?:"
      inBraces = true
    } else if (char === "}" && inBraces) {
      out += ")"
      inBraces = false
    } else if (char === "," && inBraces) out += "|"
    else out += char.replace(/[.+^$()|[\]\\]/g, "\\$&")
  }
  return new RegExp(`^${out}$`)
}

/** Existing files matching the absolute `pattern` (the pattern itself when it has no magic). */
export const expandGlob = (pattern: string): Effect.Effect<ReadonlyArray<string>> =>
  Effect.promise(async () => {
    const segments = pattern.split(path.sep)
    const firstMagic = segments.findIndex((segment) => MAGIC.test(segment))
    if (firstMagic < 0) {
      const stat = await fsp.stat(pattern).catch(() => undefined)
      return stat?.isFile() ? [pattern] : []
    }
    const base = segments.slice(0, firstMagic).join(path.sep) || path.sep
    const rest = segments.slice(firstMagic).filter((segment) => segment !== "")
    const matchers = rest.map((segment) => (segment === "**" ? "**" as const : segmentRegex(segment)))
    const found: Array<string> = []

    const walk = async (dir: string, index: number): Promise<void> => {
      if (found.length >= MAX_MATCHES || index >= matchers.length) return
      const matcher = matchers[index]!
      if (matcher === "**") {
        // `**` matches nothing here, or one more directory level.
        await walk(dir, index + 1)
      }
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => [])
      await Promise.all(entries.map(async (entry) => {
        const full = path.join(dir, entry.name)
        const isDir = entry.isDirectory() ||
          (entry.isSymbolicLink() && (await fsp.stat(full).then((s) => s.isDirectory(), () => false)))
        if (matcher === "**") {
          if (isDir && !SKIP_DIRS.has(entry.name) && !entry.name.startsWith(".")) await walk(full, index)
          else if (!isDir && index === matchers.length - 1) found.push(full)
          return
        }
        if (!matcher.test(entry.name)) return
        if (index === matchers.length - 1) {
          if (!isDir) found.push(full)
        } else if (isDir) {
          await walk(full, index + 1)
        }
      }))
    }
    await walk(base, 0)
    return [...new Set(found)].sort()
  })
