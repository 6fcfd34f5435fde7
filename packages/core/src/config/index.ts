// config/: The configuration: files, environment and plugins, decoded once with where each value came from.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).

export { ConfigService, loadConfig } from "./ConfigService.js"
export { isEnvFlag } from "./ConfigFiles.js"
export type { ConfigInfo } from "./ConfigInfo.js"

/** The configuration fails with one error, `ConfigError` (domain), naming the file and key. */
export type { ConfigError } from "@agent/domain"
