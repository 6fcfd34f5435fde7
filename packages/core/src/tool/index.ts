// tool/: The tool framework (Tool, the registry, slots, output truncation) and the helpers tools share: paths
// and permission patterns, file reads and writes, diffs, patches, bash parsing, file search.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
import type { ToolExecutionError, ToolInputError } from "./Tool.js"

export { withAliases } from "./ArgumentAliases.js"
export { MAX_ATTACHMENT_BYTES, attachmentMime } from "./Attachment.js"
export { parseCommand } from "./BashParse.js"
export { expandPath, externalDirectories } from "./BashPaths.js"
export * as EditMatch from "./EditMatch.js"
export { EditorFiles, type EditorFilesShape } from "./EditorFiles.js"
export { EditorTerminal, type EditorTerminalHandle, type EditorTerminalShape } from "./EditorTerminal.js"
export { levenshtein } from "./EditMatch.js"
export { guard, isWithin, relativeToWorktree, resolvePath } from "./ExternalDirectory.js"
export * as FileDiff from "./FileDiff.js"
export { compare } from "./FileDiff.js"
export * as FileDisk from "./FileDisk.js"
export * as FileKind from "./FileKind.js"
export { looksBinary } from "./FileKind.js"
export * as FileLock from "./FileLock.js"
export * as FileSearch from "./FileSearch.js"
export * as FileTimes from "./FileTimes.js"
export * as LineDiff from "./LineDiff.js"
export * as LineEndings from "./LineEndings.js"
export { applyHunkSteps, applyHunks } from "./PatchHunks.js"
export type { Hunk } from "./PatchHunks.js"
export { parse } from "./PatchParse.js"
export type { Operation } from "./PatchParse.js"
export * as PatchWrite from "./PatchWrite.js"
export { leftOutNote, pathPatterns, readDenied } from "./PathRules.js"
export * as TextEncoding from "./TextEncoding.js"
export * as Tool from "./Tool.js"
export { ToolExecutionError } from "./Tool.js"
export type { AnyTool } from "./Tool.js"
export { ToolRegistry } from "./ToolRegistry.js"
export * as ToolSlots from "./ToolSlots.js"
export { MAX_BYTES, MAX_LINES, Truncation, toolOutputDirectory } from "./Truncation.js"

/** The errors this subsystem's services fail with. */
export type ToolError = ToolInputError | ToolExecutionError
