import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

/**
 * Prompt texts live under `prompts/` at the repository root. Both `src/` and the built
 * `dist/` sit three levels below it, so the same relative path works for either.
 */
export const directory: string = fileURLToPath(new URL("../../../prompts/", import.meta.url))

const cache = new Map<string, string>()

/** The text of `prompts/<name>`, trimmed; read once per process. */
export const read = (name: string): string => {
  let text = cache.get(name)
  if (text === undefined) {
    text = fs.readFileSync(new URL(name, `file://${directory}`), "utf8").trim()
    cache.set(name, text)
  }
  return text
}
