import type { Part, ToolPart } from "@agent/domain"
import * as path from "node:path"
import { INVALID_TOOL } from "../llm/LLMService.js"
import type { StepTouch } from "./SnapshotTypes.js"
import type * as Tool from "../tool/Tool.js"

// Apart from Snapshot.ts, so that reading snapshots (`agent session show`) loads no model library.

/** Files a step's tool calls name, when every call says which files it changes. */
export const stepTouch = (
  parts: Iterable<Part>,
  toolOf: (id: string) => Pick<Tool.Tool, "fileEffects"> | undefined,
  directory: string
): StepTouch => {
  const paths: Array<string> = []
  for (const part of parts) {
    if (part.type !== "tool" || part.state.status === "pending") continue
    const effects = part.tool === INVALID_TOOL ? "none" : toolOf(part.tool)?.fileEffects
    if (effects === "none") continue
    if (effects !== "listed") return { kind: "unknown" }
    const named = namedFiles(part, directory)
    if (named.length === 0) return { kind: "unknown" }
    paths.push(...named)
  }
  return paths.length === 0 ? { kind: "none" } : { kind: "paths", paths }
}

const namedFiles = (part: ToolPart, directory: string): Array<string> => {
  const out: Array<string> = []
  const add = (value: unknown) => {
    if (typeof value === "string" && value.length > 0) out.push(path.resolve(directory, value))
  }
  add(part.state.input.filePath)
  add(part.state.input.file_path) // the alias edit, write and read accept (ArgumentAliases)
  const metadata = part.state.status === "pending" ? undefined : part.state.metadata
  if (metadata) {
    add(metadata.filepath)
    if (Array.isArray(metadata.files)) {
      for (const file of metadata.files as Array<unknown>) {
        if (typeof file === "object" && file !== null) {
          add((file as Record<string, unknown>).filepath)
          add((file as Record<string, unknown>).movedFrom)
        }
      }
    }
  }
  return out
}
