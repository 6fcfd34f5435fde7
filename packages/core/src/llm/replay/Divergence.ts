/**
 * Whether a replayed run still follows its recording: the request a model call gets now is
 * compared with the one recorded. What is compared is the conversation's course, not its
 * bytes: the tools offered, the user's messages, each tool call the model made, and whether
 * each tool result was an output or an error. Tool output text, the system prompt (date,
 * environment) and sampling settings are left out: they differ from machine to machine, and
 * grep or glob order files by modification time.
 */
import type { LanguageModelV3Prompt } from "@ai-sdk/provider"

/** One thing the conversation says, as compared (`key`) and as shown to a person (`shown`). */
interface Entry {
  readonly key: string
  readonly shown: string
}

export interface Compared {
  readonly prompt: LanguageModelV3Prompt
  readonly tools?: ReadonlyArray<string> | undefined
  /** The project directory, written as `<project>` so a recording replays in another checkout. */
  readonly directory?: string | undefined
}

const SHOWN_LENGTH = 80

const clip = (text: string) => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > SHOWN_LENGTH ? `${flat.slice(0, SHOWN_LENGTH - 3)}...` : flat
}

const normalize = (text: string, directory: string | undefined) =>
  directory && directory.length > 1 ? text.split(directory).join("<project>") : text

/** How a tool's result came out: the model was told an output, an error or a refusal. */
const resultKind = (type: string) => type === "execution-denied" ? "denied" : type.startsWith("error") ? "error" : "output"

const SHOWN_RESULT = { output: "an output", error: "an error", denied: "a denial" } as const

/** The conversation (without the system prompt) as a list of comparable entries. */
export const outline = (prompt: LanguageModelV3Prompt, directory?: string): ReadonlyArray<Entry> => {
  const entries: Array<Entry> = []
  for (const message of prompt) {
    switch (message.role) {
      case "system":
        break
      case "user": {
        const text = normalize(message.content.map((part) => part.type === "text" ? part.text : `[file ${part.mediaType}]`).join("\n"), directory)
        entries.push({ key: `user:${text}`, shown: `the user message "${clip(text)}"` })
        break
      }
      case "assistant":
        for (const part of message.content) {
          if (part.type !== "tool-call") continue
          const input = normalize(typeof part.input === "string" ? part.input : JSON.stringify(part.input ?? {}), directory)
          entries.push({ key: `call:${part.toolName}:${input}`, shown: `a call of ${part.toolName} ${clip(input)}` })
        }
        break
      case "tool":
        for (const part of message.content) {
          if (part.type !== "tool-result") continue
          const kind = resultKind(part.output.type)
          entries.push({ key: `result:${part.toolName}:${kind}`, shown: `${SHOWN_RESULT[kind]} from ${part.toolName}` })
        }
        break
    }
  }
  return entries
}

const toolSetDifference = (recorded: ReadonlyArray<string>, now: ReadonlyArray<string>): string | undefined => {
  const added = now.filter((name) => !recorded.includes(name))
  const removed = recorded.filter((name) => !now.includes(name))
  if (added.length === 0 && removed.length === 0) return undefined
  return [
    ...(added.length > 0 ? [`this run also offers ${added.join(", ")}`] : []),
    ...(removed.length > 0 ? [`this run does not offer ${removed.join(", ")}`] : [])
  ].join("; ")
}

/** The first way `now` leaves `recorded`, in words, or undefined when it follows it. */
export const divergence = (recorded: Compared, now: Compared): string | undefined => {
  const tools = toolSetDifference(recorded.tools ?? [], now.tools ?? [])
  if (tools) return `the tools offered differ: ${tools}`
  const before = outline(recorded.prompt, recorded.directory)
  const after = outline(now.prompt, now.directory)
  for (let index = 0; index < Math.max(before.length, after.length); index++) {
    const was = before[index]
    const is = after[index]
    if (was?.key === is?.key) continue
    if (was === undefined) return `the conversation goes on with ${is!.shown}, which the recording does not have`
    if (is === undefined) return `the recording goes on with ${was.shown}, which this run does not have`
    return `the recording has ${was.shown} where this run has ${is.shown}`
  }
  return undefined
}
