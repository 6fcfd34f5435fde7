// The editor's side of bench:acp (acp.ts), in a worker thread: it starts `agent acp`, speaks the SDK's
// client side to it and reads every update. Apart from the model server and its proxy, which time the
// model calls on the main thread: parsing the agent's updates there would delay the next call's
// arrival and count the bench's own client as the agent's per-step time.
import * as Acp from "@agentclientprotocol/sdk"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { Readable, Writable } from "node:stream"
import { parentPort, workerData } from "node:worker_threads"

const { bin, project, env, nodeArgs } = workerData
/** Wall clock comparable across threads (ms since the epoch, sub-millisecond). */
const now = () => performance.timeOrigin + performance.now()
const cpuMsOf = (pid) => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const peakRssOf = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024

const child = spawn(process.execPath, [...nodeArgs, bin, "acp"], { cwd: project, env, stdio: ["pipe", "pipe", "inherit"] })
parentPort.postMessage({ pid: child.pid })
let firstUpdate = 0
const app = Acp.client({ name: "bench" }).onNotification("session/update", ({ params }) => {
  if (params.update.sessionUpdate !== "available_commands_update") firstUpdate ||= now()
})
const connection = app.connect(Acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)))
try {
  await connection.agent.request("initialize", { protocolVersion: Acp.PROTOCOL_VERSION, clientCapabilities: {} })
  const { sessionId } = await connection.agent.request("session/new", { cwd: project, mcpServers: [] })
  await new Promise((resolve) => setTimeout(resolve, 50))
  firstUpdate = 0
  const cpuBefore = cpuMsOf(child.pid)
  const sent = now()
  const response = await connection.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "read the notes" }] })
  const result = { stopReason: response.stopReason, firstUpdate, sent, peakRss: peakRssOf(child.pid), cpu: cpuMsOf(child.pid) - cpuBefore }
  child.stdin.end()
  await new Promise((resolve) => child.once("exit", resolve))
  parentPort.postMessage({ result })
} catch (error) {
  child.kill()
  parentPort.postMessage({ error: String(error) })
}
