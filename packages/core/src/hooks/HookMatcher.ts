// Which handlers an event runs: Claude Code's matcher rules, as a pure function (table-tested).

/** A matcher of only these characters is a list of exact names; anything else is a regex. */
const NAME_LIST = /^[A-Za-z0-9_|]+$/

export type CompiledMatcher =
  | { readonly _tag: "Any" }
  | { readonly _tag: "Names"; readonly names: ReadonlySet<string> }
  | { readonly _tag: "Pattern"; readonly pattern: RegExp }
  /** A regex that does not compile matches nothing (the loader warns about it). */
  | { readonly _tag: "Invalid"; readonly error: string }

/**
 * None, "" and "*" match everything; `Bash|Write` is the names Bash and Write exactly; anything
 * else (`Edit.*`, `mcp__github__.*`, `^Read$`) is an unanchored, case-sensitive regex.
 */
export const compile = (matcher: string | undefined): CompiledMatcher => {
  if (matcher === undefined || matcher === "" || matcher === "*") return { _tag: "Any" }
  if (NAME_LIST.test(matcher)) return { _tag: "Names", names: new Set(matcher.split("|").filter((name) => name !== "")) }
  try {
    return { _tag: "Pattern", pattern: new RegExp(matcher) }
  } catch (error) {
    return { _tag: "Invalid", error: error instanceof Error ? error.message : String(error) }
  }
}

/** Whether `value` (a tool name, or the event's own value) is matched; events without one match always. */
export const test = (matcher: CompiledMatcher, value: string | undefined): boolean => {
  if (value === undefined) return true
  switch (matcher._tag) {
    case "Any":
      return true
    case "Names":
      return matcher.names.has(value)
    case "Pattern":
      return matcher.pattern.test(value)
    case "Invalid":
      return false
  }
}

export const matches = (matcher: string | undefined, value: string | undefined): boolean => test(compile(matcher), value)
