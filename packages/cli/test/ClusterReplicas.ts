import { MockOpenAIServer, ScriptedModel, TestDatabase } from "@agent/testing"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { project, serve } from "./AgentProcess.js"

// Replicas of agent serve for the cluster tests: a fresh database, a fake model that has each
// session run STEPS bash calls (each appends `s<n>-<call> <replica>` to calls.log in the project),
// and helpers to follow sessions over the API.

export const STEPS = 4

export const freePort = () =>
  Effect.promise(() =>
    new Promise<number>((resolve) => {
      const server = net.createServer()
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        server.close(() => resolve(port))
      })
    })
  )

export const json = (url: string, init?: RequestInit) => Effect.promise(() => fetch(url, init).then((response) => response.json() as Promise<any>))
export const post = (url: string, body: unknown) =>
  Effect.promise(() => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }))

/**
 * The fake model: a session's prompt names it (`[s3]`); it calls bash STEPS times (each call
 * sleeps, then appends `s3-<call> <replica>`), then says it is done.
 */
const responder = (log: string, sleep: number) => (request: MockOpenAIServer.ChatCompletionRequest) => {
  const first = request.messages.find((message) => message.role === "user")
  const label = /\[(s\d+)\]/.exec(JSON.stringify(first?.content ?? ""))?.[1] ?? "s?"
  const calls = request.messages.filter((message) => message.role === "tool").length
  if (calls >= STEPS) return `done ${label}`
  return [
    ScriptedModel.toolCall("bash", {
      command: `sleep ${sleep}; echo "${label}-${calls} $AGENT_TEST_REPLICA" >> ${log}`,
      description: `step ${calls}`
    })
  ]
}

export const finished = (messages: Array<any>) => {
  const last = messages.at(-1)
  return last?.info.role === "assistant" && last.info.finish === "stop" && last.parts.some((part: any) => part.type === "text" && /^done /.test(part.text))
}

/** The tool parts of a session's messages; anything else (an error body) fails with what it was. */
export const toolParts = (messages: Array<any>) => {
  if (!Array.isArray(messages)) throw new Error(`expected the session's messages, got ${JSON.stringify(messages)}`)
  return messages.flatMap((message) => message.parts).filter((part: any) => part.type === "tool")
}

const SHARDS = 12

/**
 * Waits until the shards are shared out: each of the `runners` holds shard locks (advisory locks,
 * numbered 1000001 and up by @effect/cluster; one lock connection a runner) and together they hold
 * every shard; then a second more, for every runner's view of the assignments to catch up (they
 * refresh every second). A fixed wait was not always long enough: sessions then all ran on one.
 */
const shardsSharedOut = (databaseUrl: string, runners: number, shards: number, context: () => string) =>
  waitFor(`${runners} runners holding the ${shards} shards`, Effect.promise(async () => {
    const [held] = await TestDatabase.query<{ runners: string; locks: string }>(databaseUrl, `
      SELECT count(DISTINCT pid) AS runners, count(*) AS locks FROM pg_locks
      WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND objid BETWEEN 1000001 AND 1999999
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
    return Number(held!.runners) === runners && Number(held!.locks) === shards ? true : undefined
  }), 30_000, context).pipe(Effect.zipRight(Effect.sleep("1 second")))

/** Replicas (three in most tests) on a fresh database, each with its runner port and its name in the environment. */
export const replicas = (
  names: ReadonlyArray<string>,
  sleep: number,
  extra: object = {},
  config: object = {},
  respond: typeof responder = responder
) =>
  Effect.gen(function*() {
    // In the project, where the commands run (a file outside it would need an approval).
    const model = yield* MockOpenAIServer.start(Array.from({ length: 400 }, () => respond("calls.log", sleep)))
    const prefix = `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
    // With the OS sandbox as it is by default: three processes in one project share its placeholders.
    const box = yield* project(model.url, {
      ...config,
      cluster: { prefix, shards: SHARDS, lock_expiration_seconds: 4, grace_seconds: 20, ...extra }
    })
    const log = path.join(box.instance.directory, "calls.log")
    fs.writeFileSync(log, "")
    // A database of its own, not a schema: shard locks are per database (TestDatabase.freshPostgresDatabase).
    const databaseUrl = yield* TestDatabase.freshPostgresDatabase
    const started = yield* Effect.forEach(names, (name) =>
      Effect.gen(function*() {
        const port = yield* freePort()
        const server = yield* serve(box, ["--replica", "--runner-port", String(port)], { AGENT_DATABASE_URL: databaseUrl, AGENT_TEST_REPLICA: name })
        return { server, runner: `127.0.0.1:${port}` }
      }), { concurrency: "unbounded" })
    const servers = started.map(({ server }) => server)
    yield* shardsSharedOut(databaseUrl, names.length, SHARDS, () => servers.map((server, index) => `${names[index]}: ${server.stderr()}`).join("\n"))
    return {
      log,
      box,
      model,
      databaseUrl,
      prefix,
      servers: Object.fromEntries(names.map((name, index) => [name, servers[index]!])),
      /** Each replica's runner address (`host:port`), as the cluster's tables name it. */
      runners: Object.fromEntries(names.map((name, index) => [name, started[index]!.runner]))
    }
  })

export const lines = (log: string) => fs.readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => line.split(" ") as [string, string])

export const waitFor = <A>(what: string, check: Effect.Effect<A | undefined>, timeoutMs = 40_000, context: () => string = () => "") =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const value = yield* check
      if (value !== undefined) return value
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${context()}`)
      yield* Effect.sleep("100 millis")
    }
  })

/**
 * The label (`s3`) of a session that replica `name` runs, from the calls' log. Sessions go to shards by
 * their random ids, so every one can land on the other replicas (1 in 64 for six sessions on two): if
 * none runs on `name` after 15 s, `more` starts another batch, once.
 */
export const sessionRunningOn = (log: string, name: string, more: Effect.Effect<void>, report: () => string) =>
  Effect.gen(function*() {
    const found = Effect.sync(() => lines(log).find(([, replica]) => replica === name)?.[0].split("-")[0])
    const early = yield* waitFor(`a session running on ${name}`, found, 15_000).pipe(Effect.catchAllDefect(() => Effect.succeed(undefined)))
    if (early !== undefined) return early
    yield* more
    return yield* waitFor(`a session running on ${name} (after a second batch of sessions)`, found, 40_000, report)
  })
