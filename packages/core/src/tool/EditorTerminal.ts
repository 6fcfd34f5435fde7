import { Context, Effect } from "effect"

/**
 * Where the bash tool runs a command when an editor offers its terminals: over ACP, the client's
 * `terminal/create` (then `terminal/output`, `terminal/wait_for_exit`, `terminal/kill`,
 * `terminal/release`), so the editor shows the command live. The default runs every command
 * locally: `available` answers false. Replaced when the runtime is built
 * (`Layer.succeed(EditorTerminal, ...)` provided to `makeAppLayer`): the tool takes it at construction.
 * Only commands that would run outside our sandbox anyway go there (see the bash tool).
 */
export interface EditorTerminalShape {
  /** Whether this session's commands can run in the editor's terminal. */
  readonly available: (sessionID: string) => boolean
  /** Starts `command` in a new editor terminal. */
  readonly create: (sessionID: string, command: TerminalCommand) => Effect.Effect<EditorTerminalHandle, Error>
}

export interface TerminalCommand {
  /** A shell command line, as the model wrote it: the editor runs it in its shell. */
  readonly commandLine: string
  /** Absolute. */
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  /** The editor keeps at most this many bytes of output, dropping the earliest. */
  readonly outputByteLimit: number
}

export interface TerminalExit {
  /** `null` when a signal ended the command. */
  readonly code: number | null
  readonly signal: string | null
}

export interface TerminalOutput {
  readonly output: string
  /** The editor dropped earlier output (over `outputByteLimit`). */
  readonly truncated: boolean
  /** Set once the command has ended. */
  readonly exit: TerminalExit | undefined
}

/** One running (or ended) command in an editor terminal. `release` must follow, whatever happened. */
export interface EditorTerminalHandle {
  /** The terminal's id, for the tool call to embed (`metadata.terminalId`). */
  readonly id: string
  readonly output: Effect.Effect<TerminalOutput, Error>
  readonly waitForExit: Effect.Effect<TerminalExit, Error>
  /** Ends the command; the terminal and its output stay until `release`. */
  readonly kill: Effect.Effect<void, Error>
  readonly release: Effect.Effect<void, Error>
}

export const localOnly: EditorTerminalShape = {
  available: () => false,
  create: () => Effect.fail(new Error("no editor terminal"))
}

export class EditorTerminal extends Context.Reference<EditorTerminal>()("@agent/core/tool/EditorTerminal", {
  defaultValue: (): EditorTerminalShape => localOnly
}) {}
