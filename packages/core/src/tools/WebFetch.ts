import { Effect, Schema } from "effect"
import * as Prompts from "../runtime/Prompts.js"
import * as Tool from "../tool/Tool.js"

const TOOL = "webfetch"

/** Responses larger than this are refused. */
export const MAX_BYTES = 5 * 1024 * 1024
export const DEFAULT_TIMEOUT_SECONDS = 30
export const MAX_TIMEOUT_SECONDS = 120

/** Sites that block scripts are less likely to block a browser. */
const BROWSER_USER_AGENT =
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
/** Cloudflare's bot challenge lets honest non-browser clients through; the retry says what we are. */
export const PLAIN_USER_AGENT = "agent"

const ACCEPT: Record<Format, string> = {
  markdown: "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, text/html;q=0.7, */*;q=0.1",
  text: "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
  html: "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, text/markdown;q=0.7, */*;q=0.1"
}

const Format = Schema.Literal("text", "markdown", "html")
type Format = typeof Format.Type

const Parameters = Schema.Struct({
  url: Schema.String.annotations({ description: "The http:// or https:// URL to fetch" }),
  format: Schema.optional(
    Format.annotations({
      description: 'What to return: "markdown" (default; HTML is converted), "text" (HTML reduced to plain text) or "html" (the raw page)'
    })
  ),
  timeout: Schema.optional(
    Schema.Number.pipe(Schema.positive()).annotations({
      description: `Timeout in seconds (default ${DEFAULT_TIMEOUT_SECONDS}, at most ${MAX_TIMEOUT_SECONDS})`,
      message: () => ({ message: `expected a number of seconds greater than 0 (at most ${MAX_TIMEOUT_SECONDS} are used)`, override: true })
    })
  )
})

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

// ---------------------------------------------------------------------------------------------
// HTML conversion

// The converter (and the DOM implementation under it) is loaded by the first markdown fetch,
// not by every start of the runtime.
let converter: Promise<{ turndown: (html: string) => string }> | undefined
const loadConverter = () =>
  (converter ??= import("turndown").then(({ default: TurndownService }) => {
    const service = new TurndownService({
      headingStyle: "atx",
      hr: "---",
      bulletListMarker: "-",
      codeBlockStyle: "fenced",
      emDelimiter: "*"
    })
    service.remove(["script", "style", "noscript", "iframe", "object", "embed", "meta", "link", "template"])
    return service
  }))

export const htmlToMarkdown = (html: string): Effect.Effect<string> =>
  Effect.promise(() => loadConverter().then((service) => service.turndown(html).trim()))

const ENTITIES: Readonly<Record<string, string>> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  copy: "©",
  reg: "®",
  hellip: "…",
  mdash: "—",
  ndash: "–",
  lsquo: "‘",
  rsquo: "’",
  ldquo: "“",
  rdquo: "”"
}

const decodeEntities = (text: string) =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return ENTITIES[name.toLowerCase()] ?? whole
  })

/** Separated from their neighbours by a blank line. */
const BLOCK_TAGS =
  "address|article|aside|blockquote|div|dl|fieldset|figcaption|figure|footer|form|h[1-6]|header|hr|main|nav|ol|p|pre|section|table|tbody|thead|tfoot|ul|title"
/** One per line. */
const LINE_TAGS = "li|tr|dt|dd"

/** The readable text of a page: no scripts, styles or tags, one block per line. */
export const htmlToText = (html: string): string =>
  decodeEntities(
    html
      .replace(/<!--[\s\S]*?-->/g, "")
      .replace(/<(script|style|noscript|iframe|object|embed|template|svg)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, "")
      .replace(/<br\s*\/?>/gi, "\n")
      .replace(new RegExp(`<\\/?(?:${BLOCK_TAGS})\\b[^>]*>`, "gi"), "\n\n")
      .replace(new RegExp(`<(?:${LINE_TAGS})\\b[^>]*>`, "gi"), "\n")
      .replace(/<(?:td|th)\b[^>]*>/gi, " ")
      .replace(/<[^>]*>/g, "")
  )
    .split("\n")
    .map((line) => line.replace(/[ \t\f\v\u00a0]+/g, " ").trim())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim()

// ---------------------------------------------------------------------------------------------
// Fetching

class TooLarge extends Error {}

/** The body, refusing anything over `MAX_BYTES` (declared or streamed). */
const readCapped = async (response: Response): Promise<Uint8Array> => {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN)
  if (Number.isFinite(declared) && declared > MAX_BYTES) {
    await response.body?.cancel().catch(() => undefined)
    throw new TooLarge()
  }
  if (!response.body) return new Uint8Array()
  const reader = response.body.getReader()
  const chunks: Array<Uint8Array> = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > MAX_BYTES) {
      await reader.cancel().catch(() => undefined)
      throw new TooLarge()
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

const request = (url: string, format: Format, userAgent: string, signal: AbortSignal) =>
  fetch(url, {
    signal,
    redirect: "follow",
    headers: { "User-Agent": userAgent, Accept: ACCEPT[format], "Accept-Language": "en-US,en;q=0.9" }
  })

const decodeText = (bytes: Uint8Array, contentType: string): string => {
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1]
  try {
    return new TextDecoder(charset ?? "utf-8").decode(bytes)
  } catch {
    return new TextDecoder("utf-8").decode(bytes)
  }
}

const hasNul = (bytes: Uint8Array) => bytes.subarray(0, 8192).includes(0)

/** `webfetch`: reads a URL as markdown, text or HTML; images come back as attachments. */
export const make: Effect.Effect<Tool.AnyTool> = Effect.sync(() =>
  Tool.make({
    id: TOOL,
    fileEffects: "none",
    description: Prompts.read("tool/webfetch.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        let url: URL
        try {
          url = new URL(params.url)
        } catch {
          return yield* fail(`Not a valid URL: ${params.url}`)
        }
        if (url.protocol !== "http:" && url.protocol !== "https:") {
          return yield* fail(`Only http:// and https:// URLs can be fetched, not ${url.protocol}`)
        }
        const format: Format = params.format ?? "markdown"
        const seconds = Math.min(params.timeout ?? DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS)
        yield* context.ask({
          permission: TOOL,
          patterns: [params.url],
          always: [params.url],
          metadata: { url: params.url, format, timeout: seconds }
        })

        const fetched = yield* Effect.tryPromise({
          try: async (interrupted) => {
            const timeout = AbortSignal.timeout(seconds * 1000)
            const signal = AbortSignal.any([context.abort, interrupted, timeout])
            try {
              let response = await request(url.href, format, BROWSER_USER_AGENT, signal)
              if (response.status === 403 && response.headers.get("cf-mitigated") === "challenge") {
                await response.body?.cancel().catch(() => undefined)
                response = await request(url.href, format, PLAIN_USER_AGENT, signal)
              }
              if (!response.ok) {
                await response.body?.cancel().catch(() => undefined)
                return { ok: false, status: response.status, statusText: response.statusText } as const
              }
              const body = await readCapped(response)
              return { ok: true, response, body } as const
            } catch (error) {
              if (timeout.aborted) throw new Error(`The request timed out after ${seconds} seconds.`)
              if (context.abort.aborted) throw new Error("The request was aborted.")
              if (error instanceof TooLarge) {
                throw new Error(`The response is too large: it exceeds the ${MAX_BYTES / 1024 / 1024} MB limit.`)
              }
              const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ""
              throw new Error(`Could not fetch ${url.href}: ${error instanceof Error ? error.message : String(error)}${cause}`)
            }
          },
          catch: (error) => fail(error instanceof Error ? error.message : String(error))
        })
        if (!fetched.ok) {
          return yield* fail(
            `The request failed with status ${fetched.status}${fetched.statusText ? ` ${fetched.statusText}` : ""}.`
          )
        }

        const { response, body } = fetched
        const contentType = response.headers.get("content-type") ?? ""
        const mime = contentType.split(";")[0]!.trim().toLowerCase()
        const title = `${params.url} (${contentType || "unknown type"})`

        if (mime.startsWith("image/") && mime !== "image/svg+xml") {
          return {
            title,
            output: `Fetched an image (${mime}, ${body.byteLength} bytes); it is attached.`,
            attachments: [{ mime, url: `data:${mime};base64,${Buffer.from(body).toString("base64")}` }],
            metadata: { contentType, bytes: body.byteLength }
          }
        }
        if (hasNul(body)) {
          return yield* fail(`The response is binary (${mime || "unknown type"}) and cannot be shown as text.`)
        }

        const text = decodeText(body, contentType)
        const isHtml = mime.includes("html") || (mime === "" && /^\s*<(!doctype html|html)/i.test(text))
        const output = format === "html" || !isHtml
          ? text
          : format === "markdown"
          ? yield* htmlToMarkdown(text)
          : htmlToText(text)
        return { title, output, metadata: { contentType, bytes: body.byteLength } }
      })
  })
)
