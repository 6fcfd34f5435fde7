import type { ConfigSource, Config, HookScope, HooksConfig, PermissionConfig } from "@agent/domain"
import type { Substitutions } from "./ConfigRedaction.js"

// What loading the configuration yields: the decoded config with the provenance of its values.

export interface ConfigWarning {
  readonly file: string
  readonly key: string
  readonly message: string
}

/** The effective configuration, decoded once, with where every value came from. */
export interface ConfigInfo {
  readonly config: Config
  /** Files (and `env:VAR` sources) that were loaded, lowest precedence first. */
  readonly sources: ReadonlyArray<string>
  readonly warnings: ReadonlyArray<ConfigWarning>
  /** Config directories (global dir, `.opencode/`, `.agent/`), lowest precedence first. */
  readonly directories: ReadonlyArray<string>
  /**
   * Where the value at `path` (e.g. `["permission", "bash", "git *"]`) was set. Looks up
   * the nearest recorded ancestor when the exact path was set as part of a larger value.
   */
  readonly origin: (path: ReadonlyArray<string>) => ConfigSource | undefined
  /** What `{env:}`/`{file:}` references put in (see ConfigRedaction.ts): masked wherever config is shown. */
  readonly substitutions?: Substitutions
  /**
   * The managed dir's own `permission` (its legacy `tools` included), in the order its files
   * wrote it: the enterprise policy. Absent when the managed dir sets no permission.
   */
  readonly managed?: ManagedPermission
  /** Each file's `hooks`, lowest precedence first, with its scope (a project's run once it is trusted). */
  readonly hooks?: ReadonlyArray<HookSource>
}

export interface HookSource {
  readonly file: string
  readonly scope: HookScope
  readonly hooks: HooksConfig
}

export interface ManagedPermission {
  readonly permission: PermissionConfig
  /** Where a path below `permission` was set, within the managed files only. */
  readonly origin: (path: ReadonlyArray<string>) => ConfigSource | undefined
}


/** `file: key: message`, or `file: message` for a warning about the whole file. */
export const describeWarning = (warning: ConfigWarning): string =>
  warning.key === "" ? `${warning.file}: ${warning.message}` : `${warning.file}: ${warning.key}: ${warning.message}`
