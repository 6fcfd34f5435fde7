/**
 * The effective sandbox settings of one agent: the configured keys (top level, then the agent's
 * own) with the defaults filled in and paths made absolute. Pure, so the defaults have a table test.
 */
import type { SandboxConfig, SandboxEnforce, SandboxMode } from "@agent/domain"
import * as path from "node:path"

export type SandboxNetwork =
  | { readonly kind: "none" }
  | { readonly kind: "all" }
  | { readonly kind: "hosts"; readonly hosts: ReadonlyArray<string> }

export interface SandboxSettings {
  readonly mode: SandboxMode
  readonly network: SandboxNetwork
  /** Extra writable paths, absolute. */
  readonly writable: ReadonlyArray<string>
  /** Extra read-only paths, absolute. */
  readonly readonly: ReadonlyArray<string>
  readonly enforce: SandboxEnforce
  /** Whether `enforce` was configured or is the default. */
  readonly enforceSource: "config" | "default"
}

/** `~`, `~/x`, `$HOME/x` are under the home directory; a relative path is relative to the project directory. */
export const absolutePath = (entry: string, base: { readonly directory: string; readonly home: string }): string => {
  if (entry === "~" || entry === "$HOME") return base.home
  if (entry.startsWith("~/")) return path.join(base.home, entry.slice(2))
  if (entry.startsWith("$HOME/")) return path.join(base.home, entry.slice(6))
  return path.resolve(base.directory, entry)
}

export const networkOf = (network: SandboxConfig["network"]): SandboxNetwork => {
  if (network === true) return { kind: "all" }
  if (network === undefined || network === false || network.length === 0) return { kind: "none" }
  return { kind: "hosts", hosts: [...new Set(network.map((host) => host.toLowerCase()))] }
}

/**
 * Defaults: `workspace-write`, no network, and `enforce` `preferred` (warn once, run unsandboxed
 * where the sandbox cannot work), except that a `mode` the user chose (other than `off`) is
 * `required` unless they say otherwise: asking for a sandbox and silently not getting one
 * would be worse than a failing command.
 */
export const resolveSettings = (
  config: SandboxConfig | undefined,
  base: { readonly directory: string; readonly home: string }
): SandboxSettings => {
  const mode = config?.mode ?? "workspace-write"
  const chosen = config?.mode !== undefined && config.mode !== "off"
  return {
    mode,
    network: networkOf(config?.network),
    writable: [...new Set((config?.writable ?? []).map((entry) => absolutePath(entry, base)))],
    readonly: [...new Set((config?.readonly ?? []).map((entry) => absolutePath(entry, base)))],
    enforce: config?.enforce ?? (chosen ? "required" : "preferred"),
    enforceSource: config?.enforce !== undefined ? "config" : "default"
  }
}

/** One line for people and the model: `workspace-write, network: none`. */
export const describeNetwork = (network: SandboxNetwork): string =>
  network.kind === "all" ? "any host" : network.kind === "none" ? "none" : `only ${network.hosts.join(", ")} (through a proxy)`
