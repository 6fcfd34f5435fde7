import { JSONSchema, Schema } from "effect"

/**
 * Argument names other agents' tools use (Claude Code's `file_path`, `old_string`, ...), accepted
 * for ours: a model trained on those sends them out of habit. The schema the model is shown
 * names only ours; a name of ours given as well wins over its alias.
 */
export const CLAUDE_CODE: Readonly<Record<string, string>> = {
  file_path: "filePath",
  old_string: "oldString",
  new_string: "newString",
  replace_all: "replaceAll"
}

/** The arguments with each alias renamed, for an object; anything else as it is (the schema rejects it). */
const renamed = (input: unknown, aliases: Readonly<Record<string, string>>): unknown => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return input
  const result: Record<string, unknown> = { ...(input as Record<string, unknown>) }
  for (const [alias, name] of Object.entries(aliases)) {
    if (!(alias in result)) continue
    if (!(name in result)) result[name] = result[alias]
    delete result[alias]
  }
  return result
}

/**
 * `parameters` that also accept the aliases (of the names `parameters` has), and the JSON
 * Schema of `parameters` alone, for the model.
 */
export const withAliases = <A, I>(
  parameters: Schema.Schema<A, I>,
  aliases: Readonly<Record<string, string>> = CLAUDE_CODE
): { readonly parameters: Schema.Schema<A, unknown>; readonly jsonSchema: Record<string, unknown> } => {
  const { $schema: _ignored, ...jsonSchema } = JSONSchema.make(parameters) as unknown as Record<string, unknown>
  const properties = (jsonSchema.properties ?? {}) as Record<string, unknown>
  const relevant = Object.fromEntries(Object.entries(aliases).filter(([, name]) => name in properties))
  // The renamed input goes through `parameters` whole: its own checks and messages.
  const accepting = Schema.transform(Schema.Unknown, parameters, {
    strict: false,
    decode: (input) => renamed(input, relevant),
    encode: (output) => output
  })
  return { parameters: accepting, jsonSchema }
}
