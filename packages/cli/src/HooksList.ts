// `agent hooks list` and `agent trust`. Module by module, so the bundle's chunk holds only what it uses.
import { loadHooks, listed } from "@agent/core/hooks/Hooks"
import { isTrusted, setTrust } from "@agent/core/hooks/ProjectTrust"
import { ConfigService } from "@agent/core/config/ConfigService"
import { Instance, makeInstanceInfo } from "@agent/core/runtime/Instance"
import { Console, Effect, Layer, Option } from "effect"
import { ExitCode } from "./ExitCode.js"
import { table } from "./Format.js"
import type { HooksListInput, TrustInput } from "./HooksCommand.js"

const layer = ConfigService.layer.pipe(Layer.provideMerge(Instance.layer))

export const list = (input: HooksListInput) =>
  Effect.gen(function*() {
    const instance = yield* Instance
    const loaded = yield* loadHooks
    const hooks = listed(loaded)
    if (input.format === "json") {
      yield* Console.log(JSON.stringify({ project: instance.worktree, trusted: loaded.trusted, hooks }, null, 2))
      return ExitCode.ok
    }
    if (hooks.length === 0) {
      yield* Console.log("No hooks are configured (docs/hooks.md).")
      return ExitCode.ok
    }
    const rows = [["EVENT", "MATCHER", "COMMAND", "SCOPE", "RUNS", "FILE"]]
    for (const hook of hooks) {
      rows.push([hook.event, hook.matcher ?? "*", hook.command, hook.scope, hook.runs ? "yes" : "no", hook.file])
    }
    yield* Console.log(table(rows))
    const held = hooks.filter((hook) => !hook.runs)
    if (held.length > 0) {
      yield* Console.log(`\nWarning: ${held.length} hook(s) do not run: ${[...new Set(held.map((hook) => hook.reason))].join("; ")}.`)
      if (!loaded.trusted && held.some((hook) => hook.scope === "project")) {
        yield* Console.log(`Read them, then run \`agent trust\` in ${instance.worktree} to let them run.`)
      }
    }
    for (const warning of loaded.warnings) yield* Console.error(`Warning: ${warning}`)
    return ExitCode.ok
  }).pipe(Effect.provide(layer))

export const trust = (input: TrustInput) =>
  Effect.gen(function*() {
    const here = yield* Instance
    // The project of the directory given: its worktree root, as the hooks' trust is looked up.
    const instance = Option.isSome(input.directory) ? makeInstanceInfo({ directory: input.directory.value, env: here.env, home: here.home }) : here
    setTrust(instance.paths.data, instance.worktree, !input.revoke)
    yield* Console.log(
      input.revoke
        ? `${instance.worktree} is no longer trusted: the hooks it brings do not run.`
        : `${instance.worktree} is trusted: the hooks in its .claude/ settings and config files run (agent hooks list shows them).`
    )
    return isTrusted(instance.paths.data, instance.worktree) === !input.revoke ? ExitCode.ok : ExitCode.runtime
  }).pipe(Effect.provide(Instance.layer))
