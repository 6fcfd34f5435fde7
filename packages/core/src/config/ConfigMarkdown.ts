import { isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml"
import {
  configError,
  isObject,
  type JsonObject,
  lineIndex,
  makeSource,
  type Path,
  type Remap,
  remapPath,
  readText,
  type Source
} from "./ConfigFiles.js"
import { normalizeAgent } from "./ConfigJson.js"

// Markdown agents, modes and commands: YAML front matter plus a body.

export const FRONT_MATTER = /^---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/
export const FRONT_MATTER_START = /^---[ \t]*\r?\n/

/** Quotes top-level `key: value` lines whose value holds `: `, a common slip in agent files. */
export const quoteColonValues = (yaml: string): string =>
  yaml
    .split("\n")
    .map((line) => {
      const m = /^([A-Za-z_][\w-]*):[ \t]+(.*?)\r?$/.exec(line)
      if (m === null) return line
      const value = m[2]!
      if (!value.includes(": ") || /^["'[{|>&*!]/.test(value)) return line
      return `${m[1]}: ${JSON.stringify(value)}`
    })
    .join("\n")

/** What a markdown file defines: an agent (body = `prompt`) or a command (body = `template`). */
export type MarkdownKind = "agent" | "mode" | "command"

/**
 * A markdown agent or command: YAML front matter plus the body, landing in `agent.<name>`
 * (body as `prompt`; modes forced primary) or `command.<name>` (body as `template`).
 */
export const markdownSource = (file: string, name: string, kind: MarkdownKind): Source => {
  const text = readText(file) ?? ""
  const match = FRONT_MATTER.exec(text)
  // Otherwise its settings (a mode, a deny rule) would silently become part of the prompt.
  if (match === null && FRONT_MATTER_START.test(text)) {
    throw configError(file, "the front matter is never closed: the `---` on line 1 needs a closing `---` line", 1)
  }
  const yamlText = match?.[1] ?? ""
  const body = match === null ? text : text.slice(match[0].length)
  const fileLineOf = lineIndex(text)
  // Front matter starts on line 2 of the file.
  const yamlFirstLine = 2

  let counter = new LineCounter()
  let doc = parseDocument(yamlText, { lineCounter: counter })
  if (doc.errors.length > 0) {
    const retryCounter = new LineCounter()
    const retry = parseDocument(quoteColonValues(yamlText), { lineCounter: retryCounter })
    if (retry.errors.length > 0) {
      const error = doc.errors[0]!
      const line = error.linePos?.[0].line
      throw configError(
        file,
        `invalid YAML front matter: ${error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "")}`,
        line === undefined ? undefined : line + yamlFirstLine - 1
      )
    }
    doc = retry
    counter = retryCounter
  }
  const data: unknown = doc.toJS()
  if (data !== null && data !== undefined && !isObject(data)) {
    throw configError(file, "front matter must be a YAML mapping", yamlFirstLine)
  }
  const bodyKey = kind === "command" ? "template" : "prompt"
  const entry: JsonObject = { ...(data ?? {}), [bodyKey]: body.trim() }
  if (kind === "mode") entry.mode = "primary"

  const remap: Remap = new Map()
  const root = kind === "command" ? "command" : "agent"
  const prefix = [root, name]
  const value = { [root]: { [name]: kind === "command" ? entry : normalizeAgent(entry, prefix, remap) } }

  const bodyStart = match === null ? 0 : match[0].length
  const firstText = body.search(/\S/)
  const promptLine = fileLineOf(firstText < 0 ? bodyStart : bodyStart + firstText)
  const yamlLine = (p: Path): number | undefined => {
    let node: unknown = doc.contents
    let offset: number | undefined
    for (const seg of p) {
      if (isMap(node)) {
        const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === seg)
        if (pair === undefined) break
        offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined
        node = pair.value
      } else if (isSeq(node)) {
        const item: unknown = node.items[Number(seg)]
        if (item === undefined) break
        offset = isScalar(item) || isMap(item) || isSeq(item) ? item.range?.[0] : offset
        node = item
      } else {
        break
      }
    }
    return offset === undefined ? undefined : counter.linePos(offset).line + yamlFirstLine - 1
  }
  return {
    file,
    value,
    locate: (p) => {
      const inFile = remapPath(remap, p).slice(2)
      if (inFile.length === 0) return makeSource(file, p, undefined)
      if (inFile[0] === bodyKey) return makeSource(file, inFile, promptLine)
      return makeSource(file, inFile, yamlLine(inFile))
    }
  }
}
