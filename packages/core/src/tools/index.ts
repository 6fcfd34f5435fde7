export { shellFor } from "./Bash.js"
export * as BuiltinTools from "./BuiltinTools.js"
export { DEFAULT_IGNORES } from "./List.js"
export { looksBinary } from "./Read.js"
