// config/: The configuration: files, environment and plugins, decoded once with where each value came from.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).

export { ConfigService, isEnvFlag, loadConfig } from "./ConfigService.js"
export type { ConfigInfo } from "./ConfigService.js"

/** The configuration fails with one error, `ConfigError` (domain), naming the file and key. */
export type { ConfigError } from "@agent/domain"
