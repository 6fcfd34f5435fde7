// The editor's side for the tests: the built `agent acp` as a subprocess, driven through the SDK's
// client app over its stdio, with a scripted model (MockOpenAIServer) behind it.
import { MockOpenAIServer, TestInstance } from "@agent/testing"
import * as Acp from "@agentclientprotocol/sdk"
import { Effect } from "effect"
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { Readable, Writable } from "node:stream"
import { fileURLToPath } from "node:url"

/** The built and bundled CLI, as an editor runs it (`pnpm test` builds before testing). */
export const bin = fileURLToPath(new URL("../../cli/dist/bundle/bin.js", import.meta.url))

/** The agent.json of a project whose model is the mock server at `url` (titles from a second one). */
export const mockConfig = (url: string, titlesUrl: string, extra: object = {}) => ({
  model: "mock/model-a",
  small_model: "titles/small",
  provider: {
    mock: { npm: "@ai-sdk/openai-compatible", options: { baseURL: url }, models: { "model-a": { limit: { context: 64000, output: 4000 } }, "model-b": {} } },
    titles: { npm: "@ai-sdk/openai-compatible", options: { baseURL: titlesUrl }, models: { small: {} } }
  },
  ...extra
})

/** A sandbox whose config points at the mock server. */
export const project = (url: string, extra: object = {}, files: Record<string, string | object> = {}) =>
  Effect.gen(function*() {
    const titles = yield* MockOpenAIServer.start(Array.from({ length: 20 }, () => "A title"))
    return yield* TestInstance.sandbox({ files: { "project/agent.json": mockConfig(url, titles.url, extra), ...files } })
  })

/** A terminal the agent created in the test editor: a real process, run as an editor would. */
export interface EditorTerminalProcess {
  readonly id: string
  readonly request: Acp.CreateTerminalRequest
  readonly process: ChildProcess
  output: string
  truncated: boolean
  exit: Acp.TerminalExitStatus | undefined
  readonly exited: Promise<Acp.TerminalExitStatus>
  killed: boolean
  released: boolean
}

/**
 * `terminal/*` handlers over child processes (each its own process group, so a kill ends what it started).
 * As Zed does, `command` and its `args` are joined into one line that a shell runs.
 */
const serveTerminals = (app: Acp.ClientApp, terminals: Array<EditorTerminalProcess>) => {
  const find = (terminalId: string) => {
    const terminal = terminals.find((entry) => entry.id === terminalId && !entry.released)
    if (terminal === undefined) throw Acp.RequestError.resourceNotFound(terminalId)
    return terminal
  }
  const kill = (terminal: EditorTerminalProcess) => {
    if (terminal.exit !== undefined || terminal.process.pid === undefined) return
    try {
      process.kill(-terminal.process.pid, "SIGKILL")
    } catch {
      // Already gone.
    }
  }
  return app
    .onRequest("terminal/create", ({ params }) => {
      const child = spawn("/bin/sh", ["-c", [params.command, ...(params.args ?? [])].join(" ")], {
        cwd: params.cwd ?? undefined,
        env: Object.fromEntries((params.env ?? []).map((variable) => [variable.name, variable.value])),
        detached: true,
        stdio: ["ignore", "pipe", "pipe"]
      })
      const limit = params.outputByteLimit ?? Infinity
      const terminal: EditorTerminalProcess = {
        id: `term_${terminals.length + 1}`,
        request: params,
        process: child,
        output: "",
        truncated: false,
        exit: undefined,
        exited: new Promise((resolve) =>
          child.on("close", (code, signal) => {
            terminal.exit = { exitCode: code, signal }
            resolve(terminal.exit)
          })
        ),
        killed: false,
        released: false
      }
      const append = (chunk: Buffer) => {
        terminal.output += chunk.toString()
        if (Buffer.byteLength(terminal.output) > limit) {
          terminal.output = Buffer.from(terminal.output).subarray(-limit).toString()
          terminal.truncated = true
        }
      }
      child.stdout!.on("data", append)
      child.stderr!.on("data", append)
      terminals.push(terminal)
      return { terminalId: terminal.id }
    })
    .onRequest("terminal/output", ({ params }) => {
      const terminal = find(params.terminalId)
      return { output: terminal.output, truncated: terminal.truncated, ...(terminal.exit ? { exitStatus: terminal.exit } : {}) }
    })
    .onRequest("terminal/wait_for_exit", ({ params }) => find(params.terminalId).exited)
    .onRequest("terminal/kill", ({ params }) => {
      const terminal = find(params.terminalId)
      terminal.killed = true
      kill(terminal)
      return {}
    })
    .onRequest("terminal/release", ({ params }) => {
      const terminal = find(params.terminalId)
      kill(terminal)
      terminal.released = true
      return {}
    })
}

export type PermissionAnswer = (request: Acp.RequestPermissionRequest) => Acp.RequestPermissionResponse | Promise<Acp.RequestPermissionResponse>

export interface Editor {
  readonly child: ChildProcessWithoutNullStreams
  readonly connection: Acp.ClientConnection
  readonly agent: Acp.ClientContext
  /** Every `session/update` received, in order. */
  readonly updates: Array<Acp.SessionNotification>
  /** Every permission question asked. */
  readonly asked: Array<Acp.RequestPermissionRequest>
  /** Files the agent wrote through the editor (`fs/write_text_file`). */
  readonly writes: Array<Acp.WriteTextFileRequest>
  readonly reads: Array<Acp.ReadTextFileRequest>
  /** Terminals the agent created (`terminal/create`), when the editor offers them. */
  readonly terminals: Array<EditorTerminalProcess>
  /** How the next questions are answered (default: allow once). */
  answer: PermissionAnswer
  readonly stderr: () => string
  readonly exited: Promise<number | null>
  /** The updates of one session, by kind. */
  readonly of: (sessionId: string, kind?: Acp.SessionUpdate["sessionUpdate"]) => Array<Acp.SessionUpdate>
}

export const choose = (optionId: string): PermissionAnswer => () => ({ outcome: { outcome: "selected", optionId } })

export interface EditorOptions {
  readonly args?: ReadonlyArray<string>
  readonly env?: Record<string, string>
  /** Handle `fs/*` requests in memory (and offer the capability at initialize). */
  readonly files?: Map<string, string>
  /** Handle `terminal/*` requests with real processes (offer the capability with `initialize(editor, { terminal: true })`). */
  readonly terminals?: boolean
}

/** `agent acp` in the sandbox's project, connected to a client app; killed when the scope ends. */
export const editor = (box: TestInstance.Sandbox, options: EditorOptions = {}) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [bin, "acp", ...(options.args ?? [])], {
        cwd: box.instance.directory,
        env: { ...box.instance.env, ...options.env } as NodeJS.ProcessEnv,
        stdio: ["pipe", "pipe", "pipe"]
      })
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      const updates: Array<Acp.SessionNotification> = []
      const asked: Array<Acp.RequestPermissionRequest> = []
      const writes: Array<Acp.WriteTextFileRequest> = []
      const reads: Array<Acp.ReadTextFileRequest> = []
      const state = { answer: choose("once") as PermissionAnswer }
      let app = Acp.client({ name: "test-editor" })
        .onNotification("session/update", ({ params }) => void updates.push(params))
        .onRequest("session/request_permission", ({ params }) => {
          asked.push(params)
          return state.answer(params)
        })
      const files = options.files
      if (files !== undefined) {
        app = app
          .onRequest("fs/read_text_file", ({ params }) => {
            reads.push(params)
            const content = files.get(params.path)
            if (content === undefined) throw Acp.RequestError.resourceNotFound(params.path)
            return { content }
          })
          .onRequest("fs/write_text_file", ({ params }) => {
            writes.push(params)
            files.set(params.path, params.content)
            return {}
          })
      }
      const terminals: Array<EditorTerminalProcess> = []
      if (options.terminals === true) app = serveTerminals(app, terminals)
      const connection = app.connect(
        Acp.ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>)
      )
      const editor: Editor = {
        child,
        connection,
        agent: connection.agent,
        updates,
        asked,
        writes,
        reads,
        terminals,
        get answer() {
          return state.answer
        },
        set answer(value) {
          state.answer = value
        },
        stderr: () => stderr,
        exited,
        of: (sessionId, kind) =>
          updates.filter((update) => update.sessionId === sessionId && (kind === undefined || update.update.sessionUpdate === kind)).map((update) => update.update)
      }
      return editor
    }),
    (editor) =>
      Effect.sync(() => {
        editor.child.kill("SIGKILL")
        for (const terminal of editor.terminals) {
          if (terminal.exit === undefined && terminal.process.pid !== undefined) {
            try {
              process.kill(-terminal.process.pid, "SIGKILL")
            } catch {
              // Already gone.
            }
          }
        }
      }).pipe(
        // Gone before the sandbox it wrote in is removed.
        Effect.zipRight(Effect.promise(() => editor.exited).pipe(Effect.timeout("5 seconds"), Effect.ignore))
      )
  )

/** `initialize` as an editor sends it: `true` offers the editor's files; or say which of files and terminals. */
export const initialize = (editor: Editor, offers: boolean | { readonly fs?: boolean; readonly terminal?: boolean } = false) =>
  Effect.promise(() => {
    const fs = typeof offers === "boolean" ? offers : offers.fs === true
    const terminal = typeof offers === "boolean" ? false : offers.terminal === true
    return editor.agent.request("initialize", {
      protocolVersion: Acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: fs, writeTextFile: fs }, terminal },
      clientInfo: { name: "test-editor", version: "1.0.0" }
    })
  })

/** A request whose failure is the value (the JSON-RPC error), for tests of bad input. */
export const failure = <A>(request: () => Promise<A>) =>
  Effect.promise(() => request().then(() => undefined, (error: unknown) => error as { code: number; message: string }))

/** Waits (polling) until `check` holds; a guard against hanging, not a timing assertion. */
export const until = (check: () => boolean, what: string, timeout = 20_000) =>
  Effect.promise(() =>
    new Promise<void>((resolve, reject) => {
      const started = Date.now()
      const poll = () => {
        if (check()) return resolve()
        if (Date.now() - started > timeout) return reject(new Error(`timed out waiting for ${what}`))
        setTimeout(poll, 20)
      }
      poll()
    })
  )

/** The text an update carries (chunks), joined. */
export const textOf = (updates: ReadonlyArray<Acp.SessionUpdate>) =>
  updates.map((update) => {
    if (!("content" in update) || update.content === null || update.content === undefined || Array.isArray(update.content)) return ""
    const content = update.content as Acp.ContentBlock
    return content.type === "text" ? content.text : ""
  }).join("")
