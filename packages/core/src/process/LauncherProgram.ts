/**
 * The command launcher: a small Node program, started once beside the runtime, that starts shell
 * commands for it (docs/hooks.md, "How a command hook is started"). Forking the runtime costs in
 * proportion to its memory (its page tables are copied, then torn down by exec); forking this small
 * program costs little, and it forks ahead of time: it keeps `warm` shells waiting, each already
 * started in the command's directory and environment and in its own process group, and hands one
 * its command when a request comes. It speaks JSON lines: requests on its stdin, replies on its stdout.
 */
import { Option, Schema } from "effect"
import { jsonLinesInput } from "./JsonLinesInput.js"

/**
 * What a warm shell runs: it waits for a line count and that many lines (the command), then execs
 * `/bin/sh -c <command>`, so the command runs exactly as a direct `sh -c` would (same pid, group,
 * `$0`, messages); what follows on its stdin is the command's own input. On EOF it exits: a warm
 * shell outlives its launcher by nothing. Its variables are not exported, so exec drops them.
 */
export const WARM_SHELL = [
  "IFS= read -r agent_launch_n || exit 0",
  "agent_launch_c=",
  "agent_launch_s=",
  "while [ \"$agent_launch_n\" -gt 0 ]; do",
  "  IFS= read -r agent_launch_l || [ -n \"$agent_launch_l\" ] || exit 0",
  "  agent_launch_c=\"$agent_launch_c$agent_launch_s$agent_launch_l\"",
  "  agent_launch_s='\n'",
  "  agent_launch_n=$((agent_launch_n - 1))",
  "done",
  "exec /bin/sh -c \"$agent_launch_c\""
].join("\n")


/**
 * The program, run with `node -e`. It names itself `agent-launcher`, takes its context (`init`)
 * first, and exits when the runtime closes its stdin, killing the groups of the commands still
 * running (the runtime is gone: nobody reads their answers).
 */
export const LAUNCHER_SCRIPT = String.raw`"use strict"
process.title = "agent-launcher"
for (const name of ["SIGINT", "SIGHUP", "SIGQUIT"]) process.on(name, () => {})
const { spawn } = require("child_process")
const WARM_SHELL = process.argv[1]
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n")
let context
const warm = []
const running = new Map()
const killGroup = (pid) => { try { process.kill(-pid, "SIGKILL") } catch {} }
const startShell = () => {
  const child = spawn("/bin/sh", ["-c", WARM_SHELL], { cwd: context.cwd, env: context.env, detached: true, stdio: ["pipe", "pipe", "pipe"] })
  child.dead = child.pid === undefined
  child.once("error", () => { child.dead = true })
  child.once("exit", () => { child.dead = true })
  child.stdin.on("error", () => {})
  return child
}
const refill = () => {
  for (let index = warm.length - 1; index >= 0; index--) if (warm[index].dead) warm.splice(index, 1)
  while (warm.length < context.warm) warm.push(startShell())
}
const take = () => {
  while (warm.length > 0) {
    const child = warm.shift()
    if (!child.dead) return child
  }
  return startShell()
}
const run = (request) => {
  const child = take()
  if (child.pid === undefined) {
    child.once("error", (error) => send({ t: "error", id: request.id, message: error.message }))
    return
  }
  running.set(request.id, child)
  send({ t: "started", id: request.id, pid: child.pid })
  let stdout = ""
  let stderr = ""
  child.stdout.setEncoding("utf8")
  child.stderr.setEncoding("utf8")
  child.stdout.on("data", (data) => { if (stdout.length < request.maxOutput) stdout += data })
  child.stderr.on("data", (data) => { if (stderr.length < request.maxOutput) stderr += data })
  child.once("error", (error) => { running.delete(request.id); send({ t: "error", id: request.id, message: error.message }) })
  child.once("close", (code, signal) => {
    running.delete(request.id)
    send({ t: "exit", id: request.id, code, signal, stdout: stdout.slice(0, request.maxOutput), stderr: stderr.slice(0, request.maxOutput) })
    setImmediate(refill)
  })
  child.stdin.end(request.head + request.input)
}
const handle = (request) => {
  if (request.t === "init") {
    context = request
    refill()
    send({ t: "ready" })
  } else if (request.t === "run") run(request)
  else if (request.t === "kill") {
    const child = running.get(request.id)
    if (child) killGroup(child.pid)
  }
}
${jsonLinesInput("agent-launcher")}
process.stdin.on("end", () => {
  for (const child of running.values()) killGroup(child.pid)
  for (const child of warm) child.stdin.end()
  process.exit(0)
})
`

/** What the runtime asks of the launcher. */
export type LauncherRequest =
  /** The directory, environment and number of warm shells every command gets; sent once, first. */
  | { readonly t: "init"; readonly cwd: string; readonly env: Readonly<Record<string, string>>; readonly warm: number }
  /** `head` (`runHead`: the command, for the warm shell) then `input` go to a shell's stdin. */
  | { readonly t: "run"; readonly id: number; readonly head: string; readonly input: string; readonly maxOutput: number }
  /** SIGKILL to the command's process group (a timeout, an interruption). */
  | { readonly t: "kill"; readonly id: number }

export const LauncherMessage = Schema.Union(
  Schema.Struct({ t: Schema.Literal("ready") }),
  Schema.Struct({ t: Schema.Literal("started"), id: Schema.Number, pid: Schema.Number }),
  Schema.Struct({
    t: Schema.Literal("exit"),
    id: Schema.Number,
    code: Schema.NullOr(Schema.Number),
    signal: Schema.NullOr(Schema.String),
    stdout: Schema.String,
    stderr: Schema.String
  }),
  Schema.Struct({ t: Schema.Literal("error"), id: Schema.Number, message: Schema.String })
)
export type LauncherMessage = typeof LauncherMessage.Type

const decodeLine = Schema.decodeUnknownOption(Schema.parseJson(LauncherMessage))

/** One line of the launcher's stdout, or undefined when it is not one of its messages. */
export const readLauncherLine = (line: string): LauncherMessage | undefined => Option.getOrUndefined(decodeLine(line))

export const encodeLauncherRequest = (request: LauncherRequest): string => `${JSON.stringify(request)}\n`

/** What a warm shell reads before the command's own input: the command's line count, then its lines. */
export const runHead = (command: string): string => `${command.split("\n").length}\n${command}\n`
