// The core's editor ports, served by the ACP client when it offered them at `initialize`: its
// files (`fs/*`: the file tools see unsaved buffers, edits land in the editor's undo history)
// and its terminals (`terminal/*`: bash commands that run outside our sandbox run there).
import type { EditorFilesShape, EditorTerminalHandle, EditorTerminalShape, TerminalExit } from "@agent/core"
import type * as Acp from "@agentclientprotocol/sdk"
import { Effect } from "effect"
import type { ClientFeatures } from "./AcpOptions.js"
import type { AcpSession } from "./AcpSession.js"

export interface PortDeps {
  /** The editor session a runtime session belongs to (itself, or a subagent's parent). */
  readonly target: (sessionID: string) => AcpSession | undefined
  /** The editor's own sessions only (not subagents, whose tool calls the editor does not show). */
  readonly own: (sessionID: string) => AcpSession | undefined
  readonly features: () => ClientFeatures
  /** The client, while connected. */
  readonly client: () => Acp.AgentContext | undefined
}

const failure = (error: unknown) => (error instanceof Error ? error : new Error(String(error)))

/** The client's files, when it offered them: the file tools read and write through the editor. */
export const clientFiles = (deps: PortDeps): EditorFilesShape => ({
  read: (sessionID, file) => {
    const session = deps.target(sessionID)
    const editor = deps.client()
    if (!deps.features().readTextFile || session === undefined || editor === undefined) return Effect.succeed(undefined)
    return Effect.tryPromise({ try: () => editor.request("fs/read_text_file", { sessionId: session.id, path: file }), catch: failure }).pipe(
      Effect.map((response) => response.content)
    )
  },
  write: (sessionID, file, content) => {
    const session = deps.target(sessionID)
    const editor = deps.client()
    if (!deps.features().writeTextFile || session === undefined || editor === undefined) return Effect.succeed(false)
    return Effect.tryPromise({ try: () => editor.request("fs/write_text_file", { sessionId: session.id, path: file, content }), catch: failure }).pipe(
      Effect.as(true)
    )
  }
})

const exitOf = (status: Acp.TerminalExitStatus | Acp.WaitForTerminalExitResponse): TerminalExit => ({
  code: status.exitCode ?? null,
  signal: status.signal ?? null
})

/** The client's terminals, when it offered them: the bash tool runs commands there (see the tool for which). */
export const clientTerminal = (deps: PortDeps): EditorTerminalShape => ({
  available: (sessionID) => deps.features().terminal && deps.own(sessionID) !== undefined && deps.client() !== undefined,
  create: (sessionID, command) =>
    Effect.gen(function*() {
      const editor = deps.client()
      const session = deps.own(sessionID)
      if (editor === undefined || session === undefined) return yield* Effect.fail(new Error("the editor is not connected"))
      const sessionId = session.id
      // The command line as `command`, without `args`: Zed, the reference client, runs `command` and its
      // `args` joined by spaces in its own shell (`bash -c`), so an argv such as ["bash", "-c", line] would
      // run only the first word of the line in the inner shell and the rest in Zed's.
      const request: Acp.CreateTerminalRequest = {
        sessionId,
        command: command.commandLine,
        cwd: command.cwd,
        env: Object.entries(command.env).map(([name, value]) => ({ name, value })),
        outputByteLimit: command.outputByteLimit
      }
      const { terminalId } = yield* Effect.tryPromise({ try: () => editor.request("terminal/create", request), catch: failure })
      const ids: Acp.TerminalOutputRequest = { sessionId, terminalId }
      const handle: EditorTerminalHandle = {
        id: terminalId,
        output: Effect.tryPromise({ try: () => editor.request("terminal/output", ids), catch: failure }).pipe(
          Effect.map((response) => ({
            output: response.output,
            truncated: response.truncated,
            exit: response.exitStatus ? exitOf(response.exitStatus) : undefined
          }))
        ),
        waitForExit: Effect.tryPromise({ try: () => editor.request("terminal/wait_for_exit", ids), catch: failure }).pipe(Effect.map(exitOf)),
        kill: Effect.tryPromise({ try: () => editor.request("terminal/kill", ids), catch: failure }).pipe(Effect.asVoid),
        release: Effect.tryPromise({ try: () => editor.request("terminal/release", ids), catch: failure }).pipe(Effect.asVoid)
      }
      return handle
    })
})
