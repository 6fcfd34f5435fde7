// config/: The configuration: files, environment and plugins, decoded once with where each value came from.
// What other subsystems use of it; they import it from here, never from its files.

export { ConfigService, isEnvFlag, loadConfig } from "./ConfigService.js"
export type { ConfigInfo } from "./ConfigService.js"

/** The configuration fails with one error, `ConfigError` (domain), naming the file and key. */
export type { ConfigError } from "@agent/domain"
