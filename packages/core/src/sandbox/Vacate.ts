/**
 * For the runtime's own file tools (write, edit, apply_patch): a config name they are to create
 * (agent.json, .agent, ...) may be held by an empty directory, the placeholder of a kept sandbox
 * (docs/sandbox.md, "A kept sandbox"). Before they look at it, this runtime's kept sandboxes holding
 * it are retired, so the name is free again; a runtime without the Sandbox service has none.
 */
import { Effect, Option } from "effect"
import { standsIn } from "./Placeholders.js"
import { Sandbox } from "./Sandbox.js"

export const vacating: Effect.Effect<(file: string) => Effect.Effect<void>> = Effect.map(Effect.serviceOption(Sandbox), (found) => {
  const vacate = Option.getOrUndefined(found)?.vacate
  return (file) => (vacate !== undefined && standsIn(file) ? vacate(file) : Effect.void)
})
