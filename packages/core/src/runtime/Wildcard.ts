/**
 * OpenCode's permission wildcards: `*` matches anything (including `/`), `?` one
 * character, backslashes count as slashes, and a trailing `" *"` also matches nothing, so
 * `ls *` covers `ls` and `ls -la` but not `lsof`. Case-insensitive only on Windows.
 */
const cache = new Map<string, RegExp>()
const CACHE_LIMIT = 2048

const compile = (pattern: string): RegExp => {
  let source = pattern
    .replaceAll("\\", "/")
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replaceAll("*", ".*")
    .replaceAll("?", ".")
  if (source.endsWith(" .*")) source = `${source.slice(0, -3)}( .*)?`
  return new RegExp(`^${source}$`, process.platform === "win32" ? "si" : "s")
}

export const match = (input: string, pattern: string): boolean => {
  let regex = cache.get(pattern)
  if (regex === undefined) {
    if (cache.size >= CACHE_LIMIT) cache.clear()
    regex = compile(pattern)
    cache.set(pattern, regex)
  }
  return regex.test(input.replaceAll("\\", "/"))
}
