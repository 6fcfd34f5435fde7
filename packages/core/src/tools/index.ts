// tools/: The built-in tools, one file each, and BuiltinTools, the registry that offers them with the user's
// custom tools.
// What other subsystems use of it; they import it from here, never from its files.

export { shellFor } from "./Bash.js"
export * as BuiltinTools from "./BuiltinTools.js"
export { DEFAULT_IGNORES } from "./List.js"
export { looksBinary } from "./Read.js"
