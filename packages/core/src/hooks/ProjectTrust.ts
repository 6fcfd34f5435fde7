// Which projects' own hooks may run: `agent trust` records a project's directory in the user's data dir
// (`<data>/trusted-projects.json`); a project's `.claude/` and config-file hooks run only once it is there.
import { Either, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

const TrustFile = Schema.parseJson(Schema.Struct({
  projects: Schema.Array(Schema.Struct({ directory: Schema.String, trusted: Schema.Number }))
}))
type TrustFile = Schema.Schema.Type<typeof TrustFile>
const decode = Schema.decodeUnknownEither(TrustFile)

export const trustFile = (dataDir: string): string => path.join(dataDir, "trusted-projects.json")

/** The trusted project directories; a missing or unreadable file trusts none. */
export const trustedProjects = (dataDir: string): TrustFile["projects"] => {
  let text: string
  try {
    text = fs.readFileSync(trustFile(dataDir), "utf8")
  } catch {
    return []
  }
  const decoded = decode(text)
  return Either.isRight(decoded) ? decoded.right.projects : []
}

export const isTrusted = (dataDir: string, directory: string): boolean =>
  trustedProjects(dataDir).some((entry) => entry.directory === path.resolve(directory))

/** Adds (or with `revoke`, removes) a project directory; written atomically, readable by the user only. */
export const setTrust = (dataDir: string, directory: string, trusted: boolean): void => {
  const resolved = path.resolve(directory)
  const others = trustedProjects(dataDir).filter((entry) => entry.directory !== resolved)
  const projects = trusted ? [...others, { directory: resolved, trusted: Date.now() }] : others
  fs.mkdirSync(dataDir, { recursive: true })
  const file = trustFile(dataDir)
  const temp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temp, JSON.stringify({ projects }, null, 2) + "\n", { mode: 0o600 })
  fs.renameSync(temp, file)
}
