// Where hooks come from: our config files (each file's `hooks`, decoded by the config loader) and
// Claude Code's settings files, read here. A file's scope decides whether its hooks may run.
import { HookEventNames, HookHandler, type HookEventName, type HookScope } from "@agent/domain"
import { Either, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { HookSource } from "../config/ConfigInfo.js"
import type { InstanceInfo } from "../runtime/Instance.js"
import { type CompiledMatcher, compile } from "./HookMatcher.js"

/** One handler as configured: its event, matcher, file and scope. */
export interface ConfiguredHook {
  readonly event: HookEventName
  readonly matcher: string | undefined
  readonly compiled: CompiledMatcher
  readonly handler: HookHandler
  readonly file: string
  readonly scope: HookScope
}

/** The same handler in several files runs once: a command by its text, an HTTP hook by its URL. */
export const handlerKey = (handler: HookHandler): string =>
  handler.type === "command" ? `command:${handler.command}` : `http:${handler.url}`

/** What a handler runs, as `agent hooks list` and `hook.ran` show it. */
export const handlerLabel = (handler: HookHandler): string => (handler.type === "command" ? handler.command : `POST ${handler.url}`)

export interface CollectedHooks {
  readonly hooks: ReadonlyArray<ConfiguredHook>
  readonly warnings: ReadonlyArray<string>
}

/** Every handler of `sources`, in their order (lowest precedence first). */
export const collect = (sources: ReadonlyArray<HookSource>): CollectedHooks => {
  const hooks: Array<ConfiguredHook> = []
  const warnings: Array<string> = []
  for (const source of sources) {
    for (const event of HookEventNames) {
      for (const group of source.hooks[event] ?? []) {
        const compiled = compile(group.matcher)
        if (compiled._tag === "Invalid") warnings.push(`${source.file}: hooks.${event}: matcher ${JSON.stringify(group.matcher)} is not a valid regex (${compiled.error}); it matches nothing`)
        for (const handler of group.hooks) hooks.push({ event, matcher: group.matcher, compiled, handler, file: source.file, scope: source.scope })
      }
    }
  }
  return { hooks, warnings }
}

// --- Claude Code's settings files --------------------------------------------------------

const ClaudeSettings = Schema.Struct({
  disableAllHooks: Schema.optional(Schema.Boolean),
  hooks: Schema.optional(Schema.Record({
    key: Schema.String,
    value: Schema.Array(Schema.Struct({ matcher: Schema.optional(Schema.String), hooks: Schema.Array(Schema.Unknown) }))
  }))
})
const decodeSettings = Schema.decodeUnknownEither(Schema.parseJson(ClaudeSettings))
const decodeHandler = Schema.decodeUnknownEither(HookHandler)
const isEvent = (name: string): name is HookEventName => (HookEventNames as ReadonlyArray<string>).includes(name)

/** Claude Code's settings files: `~/.claude/settings.json`, then the project's `.claude/settings.json` and `.claude/settings.local.json`. */
export const claudeSettingsFiles = (instance: InstanceInfo, projectEnabled: boolean): ReadonlyArray<{ file: string; scope: HookScope }> => {
  const project = [...new Set([instance.worktree, instance.directory])]
  return [
    { file: path.join(instance.home, ".claude", "settings.json"), scope: "user" as const },
    ...(projectEnabled
      ? project.flatMap((dir) => ["settings.json", "settings.local.json"].map((name) => ({ file: path.join(dir, ".claude", name), scope: "project" as const })))
      : [])
  ]
}

/**
 * The hooks of one Claude Code settings file. Its other keys are Claude Code's business; handler
 * types this runtime does not run (`prompt`, `agent`) and events it does not have are skipped with a warning.
 */
export const readClaudeSettings = (file: string, scope: HookScope): { source?: HookSource; disableAll: boolean; warnings: ReadonlyArray<string> } => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch {
    return { disableAll: false, warnings: [] }
  }
  const decoded = decodeSettings(text)
  if (Either.isLeft(decoded)) return { disableAll: false, warnings: [`${file}: not read for hooks: its hooks are not in Claude Code's settings shape`] }
  const settings = decoded.right
  const warnings: Array<string> = []
  const hooks: Record<string, Array<{ matcher?: string; hooks: Array<HookHandler> }>> = {}
  for (const [event, groups] of Object.entries(settings.hooks ?? {})) {
    if (!isEvent(event)) {
      warnings.push(`${file}: hooks.${event}: not an event this runtime has; skipped`)
      continue
    }
    hooks[event] = groups.map((group) => ({
      ...(group.matcher === undefined ? {} : { matcher: group.matcher }),
      hooks: group.hooks.flatMap((raw) => {
        const handler = decodeHandler(raw, { onExcessProperty: "ignore" })
        if (Either.isRight(handler)) return [handler.right]
        const type = typeof raw === "object" && raw !== null && "type" in raw ? String(raw.type) : "?"
        warnings.push(`${file}: hooks.${event}: a handler of type "${type}" is not run here (only "command" and "http")`)
        return []
      })
    }))
  }
  return { source: { file, scope, hooks }, disableAll: settings.disableAllHooks === true, warnings }
}
