/**
 * The supervisor of a kept sandbox: a small Node program that runs inside one long-lived bubblewrap
 * sandbox and starts the commands the runtime sends it, so a command pays a fork of a small process
 * instead of new namespaces and mounts (docs/sandbox.md, "A kept sandbox"). It speaks JSON lines:
 * requests on its stdin, replies on its stdout. Each command leads its own process group, with its own
 * cwd and environment; stdout and stderr come back interleaved, as the bash tool reads them.
 */
import { Option, Schema } from "effect"
import { jsonLinesInput } from "../process/JsonLinesInput.js"

/**
 * The program, run with `node -e`. It ignores the signals a command's `pkill` would send it, names
 * itself `agent-sandbox` (so `pkill node` spares it), and exits when the runtime closes its stdin:
 * the commands' background jobs live on under bubblewrap's init.
 */
export const SUPERVISOR_SCRIPT = String.raw`"use strict"
process.title = "agent-sandbox"
for (const name of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"]) process.on(name, () => {})
const { spawn } = require("child_process")
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n")
const groups = new Map()
const children = new Map()
const signal = (pid, name) => { try { process.kill(-pid, name); return true } catch (error) { return error.code === "EPERM" } }
const stop = (id, graceMs) => {
  const pid = groups.get(id)
  if (pid === undefined || !signal(pid, "SIGTERM")) return send({ t: "stopped", id })
  const killAt = Date.now() + graceMs
  let giveUpAt
  const tick = () => {
    if (!signal(pid, 0)) return send({ t: "stopped", id })
    if (giveUpAt === undefined && Date.now() >= killAt) { signal(pid, "SIGKILL"); giveUpAt = Date.now() + 1000 }
    if (giveUpAt !== undefined && Date.now() >= giveUpAt) return send({ t: "stopped", id })
    setTimeout(tick, 25)
  }
  tick()
}
const run = (request) => {
  let child
  try {
    child = spawn(request.argv[0], request.argv.slice(1), { cwd: request.cwd, env: request.env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  } catch (error) {
    return send({ t: "error", id: request.id, message: String(error && error.message || error) })
  }
  if (child.pid !== undefined) groups.set(request.id, child.pid)
  children.set(request.id, child)
  const out = (data) => send({ t: "out", id: request.id, data })
  child.stdout.setEncoding("utf8")
  child.stderr.setEncoding("utf8")
  child.stdout.on("data", out)
  child.stderr.on("data", out)
  child.once("error", (error) => send({ t: "error", id: request.id, message: error.message }))
  child.once("exit", (code, signal) => send({ t: "exit", id: request.id, code, signal }))
  child.once("close", () => { children.delete(request.id); send({ t: "close", id: request.id }) })
}
const handle = (request) => {
  if (request.t === "run") run(request)
  else if (request.t === "stop") stop(request.id, request.graceMs)
  else if (request.t === "detach") {
    const child = children.get(request.id)
    if (child) { child.stdout.destroy(); child.stderr.destroy() }
    groups.delete(request.id)
  }
}
${jsonLinesInput("agent-sandbox")}
process.stdin.on("end", () => process.exit(0))
send({ t: "ready" })
`

/** What the runtime asks of the supervisor. */
export type SupervisorRequest =
  | {
    readonly t: "run"
    readonly id: number
    readonly argv: ReadonlyArray<string>
    readonly cwd: string
    readonly env: Readonly<Record<string, string>>
  }
  /** SIGTERM to the command's group, SIGKILL after `graceMs`; `stopped` once the group is gone. */
  | { readonly t: "stop"; readonly id: number; readonly graceMs: number }
  /** Stop reading the command's output (its background jobs may hold the pipes) and forget it. */
  | { readonly t: "detach"; readonly id: number }

export const SupervisorMessage = Schema.Union(
  Schema.Struct({ t: Schema.Literal("ready") }),
  Schema.Struct({ t: Schema.Literal("out"), id: Schema.Number, data: Schema.String }),
  Schema.Struct({ t: Schema.Literal("exit"), id: Schema.Number, code: Schema.NullOr(Schema.Number), signal: Schema.NullOr(Schema.String) }),
  Schema.Struct({ t: Schema.Literal("close"), id: Schema.Number }),
  Schema.Struct({ t: Schema.Literal("error"), id: Schema.Number, message: Schema.String }),
  Schema.Struct({ t: Schema.Literal("stopped"), id: Schema.Number })
)
export type SupervisorMessage = typeof SupervisorMessage.Type

const decodeLine = Schema.decodeUnknownOption(Schema.parseJson(SupervisorMessage))

/** One line of the supervisor's stdout, or undefined when it is not one of its messages. */
export const readSupervisorLine = (line: string): SupervisorMessage | undefined => Option.getOrUndefined(decodeLine(line))

export const encodeRequest = (request: SupervisorRequest): string => `${JSON.stringify(request)}\n`
