// tools/: The built-in tools, one file each, and BuiltinTools, the registry that offers them with the user's
// custom tools.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).

export { shellFor } from "./Bash.js"
export * as BuiltinTools from "./BuiltinTools.js"
export { DEFAULT_IGNORES } from "./List.js"
export { looksBinary } from "./Read.js"
