import * as path from "node:path"
import { configError, expandHome, lineIndex, type LoadContext, readText } from "./ConfigFiles.js"

// `{env:NAME}` and `{file:path}` references in a config text, replaced before it is parsed; what they
// put in is recorded so it can be masked wherever config is shown.

export const substitute = (text: string, file: string, baseDir: string, ctx: LoadContext): string => {
  const { instance } = ctx
  const withEnv = text.replace(/\{env:([^}]+)\}/g, (token: string, name: string) => {
    const value = instance.env[name.trim()] ?? ""
    // As it stands in the JSON text, the way the config will hold it once parsed.
    if (value !== "") ctx.substitutions.set(value, token)
    return value
  })
  let lineOf: ((offset: number) => number) | undefined
  return withEnv.replace(/\{file:([^}]+)\}/g, (token: string, ref: string, offset: number) => {
    const lineStart = withEnv.lastIndexOf("\n", offset - 1) + 1
    if (withEnv.slice(lineStart, offset).trim().startsWith("//")) return token
    const expanded = expandHome(ref.trim(), instance.home)
    const resolved = path.isAbsolute(expanded) ? expanded : path.resolve(baseDir, expanded)
    const content = readText(resolved)
    if (content === undefined) {
      lineOf ??= lineIndex(withEnv)
      throw configError(file, `bad file reference: ${token} (${resolved} not found)`, lineOf(offset))
    }
    if (content.trim() !== "") ctx.substitutions.set(content.trim(), token)
    return JSON.stringify(content.trim()).slice(1, -1)
  })
}

