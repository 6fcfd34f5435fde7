import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

/**
 * Prompt texts live under `prompts/` at the repository root. This file sits four levels below
 * it, in `src/runtime/` and in the built `dist/runtime/` alike, so the same relative path works
 * for either (the CLI bundle keeps this file's URL, see packages/cli/bundle.mjs).
 */
export const directory: string = fileURLToPath(new URL("../../../../prompts/", import.meta.url))

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
