import { Context, Effect } from "effect"

/**
 * Where the file tools (edit, write) read a file's text and write its new text when an editor
 * holds the files: over ACP, the client's `fs/read_text_file` and `fs/write_text_file`, so the
 * tools see unsaved buffers and the edits land in the editor's undo history. The default reads
 * and writes the disk: every method answers "not mine". Replaced when the runtime is built
 * (`Layer.succeed(EditorFiles, ...)` provided to `makeAppLayer`): the tools take it at construction.
 */
export interface EditorFilesShape {
  /** The file's text as the editor has it; `undefined`: read the disk. */
  readonly read: (sessionID: string, file: string) => Effect.Effect<string | undefined, Error>
  /** Writes the text through the editor; `false`: write the disk. */
  readonly write: (sessionID: string, file: string, text: string) => Effect.Effect<boolean, Error>
}

export const diskOnly: EditorFilesShape = {
  read: () => Effect.succeed(undefined),
  write: () => Effect.succeed(false)
}

export class EditorFiles extends Context.Reference<EditorFiles>()("@agent/core/tool/EditorFiles", {
  defaultValue: (): EditorFilesShape => diskOnly
}) {}
