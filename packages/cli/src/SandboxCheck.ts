// Module by module, so the bundle's chunk for this command holds only what it uses.
import { AgentRegistry } from "@agent/core/agent/AgentRegistry"
import { Bus } from "@agent/core/runtime/Bus"
import { Instance } from "@agent/core/runtime/Instance"
import { ConfigService } from "@agent/core/config/ConfigService"
import { describePlan, Sandbox, type SandboxCheck } from "@agent/core/sandbox/Sandbox"
import { Console, Effect, Layer, Option } from "effect"
import { ExitCode } from "./ExitCode.js"
import { table } from "./Format.js"
import type { SandboxCheckInput } from "./SandboxCommand.js"

const layer = Layer.mergeAll(AgentRegistry.layer, Sandbox.layer.pipe(Layer.provide(Bus.layer))).pipe(
  Layer.provideMerge(ConfigService.layer),
  Layer.provideMerge(Instance.layer)
)

const works = (ok: boolean, what: string, why: string) => (ok ? `${what}: works` : `${what}: does not work (${why})`)

/** The report, line by line: this machine first, then the agent's settings and what they make writable. */
export const report = (agent: string, result: SandboxCheck): Array<string> => {
  const { capabilities: found, layout, plan } = result
  const lines: Array<Array<string>> = [["platform", found.platform]]
  lines.push(["bubblewrap", found.bwrap ? `${found.bwrap.path} (${found.bwrap.version})` : "not found on PATH"])
  if (found.bwrap) {
    lines.push(["namespaces", works(found.works, "user, mount, pid and ipc", "see below")])
    lines.push(["/proc", works(found.proc, "a fresh /proc", "/proc is empty inside")])
    lines.push(["network", works(found.network, "a network namespace", "network cannot be limited")])
  }
  lines.push(["socat", found.socat ? `${found.socat} (lists of allowed hosts work)` : "not found (lists of allowed hosts cannot work)"])
  const out = table(lines).split("\n")
  if (found.problem) out.push("", `The sandbox cannot start here: ${found.problem}.`)
  for (const note of found.notes) out.push(`Note: ${note}.`)
  const enforce = `${plan.settings.enforce}${plan.settings.enforceSource === "default" ? " (default)" : ""}`
  out.push("", `Agent ${agent}: ${describePlan(plan)}; enforce: ${enforce}.`)
  if (plan.settings.mode === "off") out.push("Commands run without a sandbox (sandbox.mode is \"off\").")
  else if (plan.active) out.push("Commands run in the sandbox.")
  else if (plan.settings.enforce === "required") out.push("Commands are refused: the sandbox is required and cannot be used.")
  else out.push("Commands run UNSANDBOXED, with one warning per run (set sandbox.enforce to \"required\" to refuse them).")
  if (plan.settings.mode !== "off") {
    const kinds = { writable: "writable", readonly: "read-only", placeholder: "held absent" } as const
    const rows = layout.mounts.map((mount) => [kinds[mount.kind], mount.path])
    if (rows.length > 0) out.push("", "Everything else is read-only. In the sandbox:", table(rows))
    out.push("(held absent: created empty and read-only while a command runs, so a command cannot create it)")
    for (const missing of layout.missing) out.push(`Not writable, does not exist: ${missing}`)
  }
  return out
}

export const check = (input: SandboxCheckInput) =>
  Effect.gen(function*() {
    const registry = yield* AgentRegistry
    const agent = Option.isSome(input.agent) ? yield* registry.get(input.agent.value) : yield* registry.defaultAgent()
    const result = yield* (yield* Sandbox).check(agent.sandbox)
    const usable = result.plan.active || result.plan.settings.mode === "off"
    if (input.format === "json") {
      yield* Console.log(JSON.stringify({ agent: agent.name, usable, ...result }, null, 2))
    } else {
      yield* Console.log(report(agent.name, result).join("\n"))
    }
    return usable ? ExitCode.ok : ExitCode.runtime
  }).pipe(Effect.provide(layer))
