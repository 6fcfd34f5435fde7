// `skills.urls`: skills published on a web server, as OpenCode reads them. `<url>/index.json` lists
// `{ skills: [{ name, files: [...] }] }`; each file is `<url>/<name>/<file>`. They are copied into a
// cache folder per URL, which is then searched like a `skills.paths` entry; when the server cannot
// be reached the copy from the last time is used.
import { Effect, Schema } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"

const Index = Schema.Struct({
  skills: Schema.Array(Schema.Struct({ name: Schema.String, files: Schema.Array(Schema.String) }))
})
const decodeIndex = Schema.decodeUnknownEither(Schema.parseJson(Index))

/** Each request's limit: the first step waits for skill discovery. */
const FETCH_TIMEOUT_MS = 5_000
/** A skill's file larger than this is not kept. */
const MAX_FILE_BYTES = 1024 * 1024
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/** The cache folder of `url` under `cacheRoot`: one per URL, named by its hash. */
export const cacheDirOf = (cacheRoot: string, url: string): string =>
  path.join(cacheRoot, createHash("sha256").update(url).digest("hex").slice(0, 16))

/** Why an index entry's file path is refused (absolute, `..`, a URL), or undefined when it is fine. */
export const badFilePath = (file: string): string | undefined => {
  if (file.length === 0) return "an empty path"
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(file) || file.startsWith("//")) return "a URL, not a path in the skill"
  if (path.posix.isAbsolute(file) || path.win32.isAbsolute(file)) return "an absolute path"
  if (file.split(/[\\/]/).includes("..")) return "a path leaving the skill's folder"
  return undefined
}

const get = async (url: string): Promise<Buffer> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: "follow" })
  if (!response.ok) throw new Error(`HTTP ${response.status}`)
  const body = Buffer.from(await response.arrayBuffer())
  if (body.byteLength > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`)
  return body
}

/** Writes beside the target then renames, so a reader never sees half a file. */
const writeAtomic = async (file: string, body: Buffer) => {
  await fs.mkdir(path.dirname(file), { recursive: true })
  const temp = `${file}.${process.pid}.tmp`
  await fs.writeFile(temp, body)
  await fs.rename(temp, file)
}

/**
 * Copies the skills `url` publishes into its cache folder and returns the folder; problems are
 * warnings (naming the URL and what went wrong), never failures: the cached copy stays in use.
 */
export const pullSkills = (url: string, cacheRoot: string): Effect.Effect<string> =>
  Effect.gen(function*() {
    const dir = cacheDirOf(cacheRoot, url)
    const base = url.endsWith("/") ? url : `${url}/`
    const indexUrl = new URL("index.json", base).href
    const indexBody = yield* Effect.tryPromise(() => get(indexUrl)).pipe(Effect.either)
    if (indexBody._tag === "Left") {
      yield* Effect.logWarning(`skills.urls: cannot fetch ${indexUrl} (${messageOf(indexBody.left)}); using the copy from the last time, if any`)
      return dir
    }
    const index = decodeIndex(indexBody.right.toString("utf8"))
    if (index._tag === "Left") {
      yield* Effect.logWarning(`skills.urls: ${indexUrl} is not a skills index ({ "skills": [{ "name", "files" }] }): ${index.left.message.split("\n")[0]}`)
      return dir
    }
    for (const skill of index.right.skills) {
      if (!NAME.test(skill.name)) {
        yield* Effect.logWarning(`skills.urls: ${indexUrl}: skill name ${JSON.stringify(skill.name)} is not a plain folder name; skipped`)
        continue
      }
      const problems = skill.files.flatMap((file) => {
        const bad = badFilePath(file)
        return bad ? [`${JSON.stringify(file)} is ${bad}`] : []
      })
      if (problems.length > 0) {
        yield* Effect.logWarning(`skills.urls: ${indexUrl}: skill ${skill.name} skipped: ${problems.join("; ")}`)
        continue
      }
      const skillBase = new URL(`${encodeURIComponent(skill.name)}/`, base).href
      yield* Effect.forEach(skill.files, (file) =>
        Effect.tryPromise(async () => writeAtomic(path.join(dir, skill.name, file), await get(new URL(file, skillBase).href))).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning(`skills.urls: cannot fetch ${file} of skill ${skill.name} from ${url} (${messageOf(error)}); the cached copy stays, if any`)
          )
        ), { concurrency: 8, discard: true })
    }
    return dir
  })

const messageOf = (error: unknown): string => {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error
  return cause instanceof Error ? cause.message : String(cause)
}
