import type {
  LanguageModelV3,
  LanguageModelV3DataContent,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultOutput
} from "@ai-sdk/provider"
import type { FilePart, ImagePart, ModelMessage, TextPart, ToolResultPart } from "ai"

/**
 * Builds the provider-level prompt (`LanguageModelV3Prompt`) from the loop's `ModelMessage`s.
 *
 * `streamText` re-validates and re-converts the whole history on every call, which made each
 * step cost O(history). The loop hands us the same message objects step after step (finished
 * messages are cached in `ModelMessageCache`), so each converted message is remembered by
 * identity and only new messages are converted: a step costs what it adds.
 */
const converted = new WeakMap<ModelMessage, LanguageModelV3Message>()

/** A file part names a URL the model cannot fetch itself: the bytes are downloaded first. */
export class PromptAssetError extends Error {
  constructor(readonly url: string, detail: string) {
    super(`cannot download ${url} for the model: ${detail}`)
  }
}

type SupportedUrls = Record<string, Array<RegExp>>

const urlSupported = (supported: SupportedUrls, mediaType: string, url: string): boolean => {
  const lowerType = mediaType.toLowerCase()
  for (const [pattern, regexes] of Object.entries(supported)) {
    const lowerPattern = pattern.toLowerCase()
    const matches = lowerPattern === "*" || lowerPattern === "*/*" || lowerPattern === lowerType ||
      (lowerPattern.endsWith("/*") && lowerType.startsWith(lowerPattern.slice(0, -1)))
    if (matches && regexes.some((regex) => regex.test(url))) return true
  }
  return false
}

/** `data:` URLs become base64 with their media type; other URLs stay URLs; bytes stay bytes. */
const dataContent = (data: unknown): { readonly data: LanguageModelV3DataContent; readonly mediaType?: string } => {
  if (data instanceof Uint8Array) return { data }
  if (data instanceof ArrayBuffer) return { data: new Uint8Array(data) }
  const text = data instanceof URL ? data.toString() : String(data)
  if (text.startsWith("data:")) {
    const comma = text.indexOf(",")
    const header = text.slice(5, comma < 0 ? undefined : comma)
    const mediaType = header.split(";")[0]
    return { data: comma < 0 ? "" : text.slice(comma + 1), ...(mediaType ? { mediaType } : {}) }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    try {
      return { data: new URL(text) }
    } catch {
      // not a URL after all: base64 text
    }
  }
  return { data: text }
}

const userMessage = (message: Extract<ModelMessage, { role: "user" }>): LanguageModelV3Message => {
  const content: Array<Extract<LanguageModelV3Message, { role: "user" }>["content"][number]> = []
  if (typeof message.content === "string") {
    content.push({ type: "text", text: message.content })
  } else {
    for (const part of message.content as ReadonlyArray<TextPart | ImagePart | FilePart>) {
      if (part.type === "text") {
        if (part.text !== "") content.push({ type: "text", text: part.text, ...(part.providerOptions ? { providerOptions: part.providerOptions } : {}) })
        continue
      }
      const source = dataContent(part.type === "image" ? part.image : part.data)
      const mediaType = source.mediaType ?? part.mediaType ?? (part.type === "image" ? "image/*" : "application/octet-stream")
      content.push({
        type: "file",
        data: source.data,
        mediaType,
        ...(part.type === "file" && part.filename ? { filename: part.filename } : {}),
        ...(part.providerOptions ? { providerOptions: part.providerOptions } : {})
      })
    }
  }
  return { role: "user", content, ...(message.providerOptions ? { providerOptions: message.providerOptions } : {}) }
}

const toolResult = (part: ToolResultPart) => ({
  type: "tool-result" as const,
  toolCallId: part.toolCallId,
  toolName: part.toolName,
  output: part.output as LanguageModelV3ToolResultOutput,
  ...(part.providerOptions ? { providerOptions: part.providerOptions } : {})
})

const convertMessage = (message: ModelMessage): LanguageModelV3Message => {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content }
    case "user":
      return userMessage(message)
    case "assistant": {
      if (typeof message.content === "string") return { role: "assistant", content: [{ type: "text", text: message.content }] }
      const content: Extract<LanguageModelV3Message, { role: "assistant" }>["content"] = []
      for (const part of message.content) {
        if (part.type === "tool-approval-request") continue
        const providerOptions = part.providerOptions ? { providerOptions: part.providerOptions } : {}
        switch (part.type) {
          case "text":
            if (part.text !== "" || part.providerOptions) content.push({ type: "text", text: part.text, ...providerOptions })
            break
          case "reasoning":
            content.push({ type: "reasoning", text: part.text, ...providerOptions })
            break
          case "file": {
            const source = dataContent(part.data)
            content.push({
              type: "file",
              data: source.data,
              mediaType: source.mediaType ?? part.mediaType,
              ...(part.filename ? { filename: part.filename } : {}),
              ...providerOptions
            })
            break
          }
          case "tool-call":
            content.push({
              type: "tool-call",
              toolCallId: part.toolCallId,
              toolName: part.toolName,
              input: part.input,
              ...(part.providerExecuted !== undefined ? { providerExecuted: part.providerExecuted } : {}),
              ...providerOptions
            })
            break
          case "tool-result":
            content.push(toolResult(part))
            break
        }
      }
      return { role: "assistant", content, ...(message.providerOptions ? { providerOptions: message.providerOptions } : {}) }
    }
    case "tool":
      return {
        role: "tool",
        content: message.content.flatMap((part) => part.type === "tool-result" ? [toolResult(part)] : []),
        ...(message.providerOptions ? { providerOptions: message.providerOptions } : {})
      }
  }
}

const cachedMessage = (message: ModelMessage): LanguageModelV3Message => {
  let hit = converted.get(message)
  if (!hit) {
    hit = convertMessage(message)
    converted.set(message, hit)
  }
  return hit
}

/** Replaces file URLs the model cannot read by their downloaded bytes (rare: only such attachments pay). */
const downloadAssets = async (
  prompt: LanguageModelV3Prompt,
  supported: SupportedUrls,
  signal: AbortSignal | undefined
): Promise<LanguageModelV3Prompt> => {
  const needs = (data: unknown, mediaType: string) =>
    data instanceof URL && !urlSupported(supported, mediaType, data.toString())
  if (!prompt.some((message) => message.role === "user" && message.content.some((part) => part.type === "file" && needs(part.data, part.mediaType)))) {
    return prompt
  }
  return Promise.all(prompt.map(async (message) => {
    if (message.role !== "user") return message
    const content = await Promise.all(message.content.map(async (part) => {
      if (part.type !== "file" || !needs(part.data, part.mediaType)) return part
      const url = part.data as URL
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new PromptAssetError(url.toString(), `unsupported protocol ${url.protocol}`)
      const response = await fetch(url, signal ? { signal } : {}).catch((error: unknown) => {
        throw new PromptAssetError(url.toString(), error instanceof Error ? error.message : String(error))
      })
      if (!response.ok) throw new PromptAssetError(url.toString(), `HTTP ${response.status}`)
      const bytes = new Uint8Array(await response.arrayBuffer())
      const mediaType = part.mediaType.endsWith("/*") ? response.headers.get("content-type")?.split(";")[0] ?? part.mediaType : part.mediaType
      return { ...part, data: bytes, mediaType }
    }))
    return { ...message, content }
  }))
}

/**
 * The prompt built for a conversation's previous request, found by the conversation's first
 * message: the next request repeats the same messages and adds a few, so only those are
 * converted again (a long session's requests otherwise cost more with every step).
 */
interface BuiltPrompt {
  readonly inputs: ReadonlyArray<ModelMessage>
  readonly body: ReadonlyArray<LanguageModelV3Message>
  /** `body.length` before each input was added, and after the last one. */
  readonly lengthBefore: ReadonlyArray<number>
}
const built = new WeakMap<ModelMessage, BuiltPrompt>()

/**
 * The prompt for one call: system first, consecutive tool messages merged (providers expect
 * one tool message per assistant turn), converted messages reused across steps.
 */
export const toProviderPrompt = async (
  model: LanguageModelV3,
  system: string,
  messages: ReadonlyArray<ModelMessage>,
  signal?: AbortSignal
): Promise<LanguageModelV3Prompt> => {
  const first = messages[0]
  const previous = first === undefined ? undefined : built.get(first)
  let common = 0
  if (previous) {
    const limit = Math.min(previous.inputs.length, messages.length)
    while (common < limit && previous.inputs[common] === messages[common]) common++
    // A trailing tool message absorbs the tool messages after it: keep only what can no longer change.
    while (common > 0 && previous.body[previous.lengthBefore[common]! - 1]?.role === "tool") common--
  }
  const body: Array<LanguageModelV3Message> = common > 0 ? previous!.body.slice(0, previous!.lengthBefore[common]) : []
  const inputs: Array<ModelMessage> = common > 0 ? previous!.inputs.slice(0, common) : []
  const lengthBefore: Array<number> = common > 0 ? previous!.lengthBefore.slice(0, common) : []
  for (let index = common; index < messages.length; index++) {
    const message = messages[index]!
    inputs.push(message)
    lengthBefore.push(body.length)
    const next = cachedMessage(message)
    const last = body.at(-1)
    if (next.role === "tool") {
      if (next.content.length === 0) continue
      if (last?.role === "tool") {
        body[body.length - 1] = { ...last, content: [...last.content, ...next.content] }
        continue
      }
    }
    if (next.role === "user" && next.content.length === 0) continue
    body.push(next)
  }
  lengthBefore.push(body.length)
  if (first !== undefined) built.set(first, { inputs, body, lengthBefore })
  const prompt: Array<LanguageModelV3Message> = system !== "" ? [{ role: "system", content: system }, ...body] : body.slice()
  const supported = await model.supportedUrls
  return downloadAssets(prompt, supported, signal)
}
