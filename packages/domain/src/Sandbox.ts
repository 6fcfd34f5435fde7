import { Schema } from "effect"

/**
 * What a sandboxed command may write: nothing (`read-only`), the project and the temp dirs
 * (`workspace-write`, the default where the sandbox works), or anything (`off`: no sandbox).
 */
export const SandboxMode = Schema.Literal("off", "workspace-write", "read-only")
export type SandboxMode = typeof SandboxMode.Type

/** When the sandbox cannot be set up: fail the command (`required`) or warn once and run it unsandboxed (`preferred`). */
export const SandboxEnforce = Schema.Literal("required", "preferred")
export type SandboxEnforce = typeof SandboxEnforce.Type

/**
 * A host a sandboxed command may reach through the sandbox's proxy: `example.com`, `*.example.com`
 * (any subdomain, not the domain itself), optionally with `:port`.
 */
export const SandboxHost = Schema.String.pipe(
  Schema.filter((value) => /^(\*\.)?[A-Za-z0-9_.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(value), {
    message: (issue) =>
      `expected a host name such as "registry.npmjs.org", "*.github.com" or "localhost:8080", actual ${JSON.stringify(issue.actual)}`
  })
)

/**
 * The `sandbox` key of the config (top level and `agent.<name>.sandbox`, whose keys replace the
 * top-level ones). See docs/sandbox.md.
 */
export const SandboxConfig = Schema.Struct({
  mode: Schema.optional(SandboxMode),
  /** `false` (default): no network; `true`: any; a list: only these hosts, through a local proxy. */
  network: Schema.optional(Schema.Union(Schema.Boolean, Schema.Array(SandboxHost))),
  /** More paths a sandboxed command may write (`~` is the home directory; relative to the project). */
  writable: Schema.optional(Schema.Array(Schema.String)),
  /** Paths that stay read-only even inside writable ones. */
  readonly: Schema.optional(Schema.Array(Schema.String)),
  /** Default: `required` when `mode` is set (other than `off`), else `preferred`. */
  enforce: Schema.optional(SandboxEnforce)
})
export type SandboxConfig = typeof SandboxConfig.Type
