/** The parts of a prompt as the loop takes them, with the files a request may have the server read. */
import { attachmentAccess, attachmentMime, decideCommand, type InstanceInfo, MAX_ATTACHMENT_BYTES, type PromptPartInput, realPath } from "@agent/core"
import { BadRequestError, ForbiddenError, type PartInput, type PermissionRule, type PermissionRuleset } from "@agent/domain"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/**
 * Prompt parts as the loop takes them. `file://` urls are read here (text inlined, images
 * and PDFs as data urls, directories listed), so the model never sees a local path it
 * cannot open; data and http(s) urls pass through. A file is read only when the session's
 * rules allow it (see `filePart`); `rules` gives them, asked once and only for file urls.
 */
export const toPromptParts = <E>(
  parts: ReadonlyArray<PartInput>,
  instance: InstanceInfo,
  rules: Effect.Effect<PermissionRuleset, E>
) =>
  Effect.gen(function*() {
    const ruleset = parts.some((part) => part.type === "file" && part.url.startsWith("file:")) ? yield* rules : []
    return yield* Effect.forEach(parts, (part): Effect.Effect<PromptPartInput, BadRequestError | ForbiddenError> => {
      switch (part.type) {
        case "text":
          return Effect.succeed({ type: "text", text: part.text, ...(part.synthetic ? { synthetic: true } : {}) })
        case "agent":
          return Effect.succeed({ type: "agent", name: part.name })
        case "subtask":
          return Effect.succeed({
            type: "subtask",
            prompt: part.prompt,
            description: part.description,
            agent: part.agent,
            ...(part.model ? { model: part.model } : {})
          })
        case "file":
          return filePart(part, instance, ruleset)
      }
    })
  })

const statOf = (file: string) => {
  try {
    return fs.statSync(file)
  } catch {
    return undefined
  }
}

const describeRule = (rule: PermissionRule) => {
  const source = rule.source
  const where = source?.file ? `${source.file}${source.key ? ` (${source.key})` : ""}` : source?.note
  return `${rule.permission} ${JSON.stringify(rule.pattern)} → ${rule.action}${source ? ` [${source.layer}${where ? `: ${where}` : ""}]` : " [no rule matched: the default]"}`
}

/** Why the rules do not let the server read `file` for a request, or undefined when they allow it. */
export const readRefusal = (file: string, kind: "file" | "directory", instance: InstanceInfo, ruleset: PermissionRuleset) => {
  const refusal = attachmentAccess(instance, file, kind, ruleset)
  if (!refusal) return undefined
  const message = `${refusal.path} may not be read for a request: ${refusal.permission} ${JSON.stringify(refusal.pattern)} ` +
    `is decided by ${describeRule(refusal.rule)}; only a rule that allows it lets the server read a file for a request`
  return { ...refusal, message }
}

/**
 * Why a shell piece of a command, built from a client's arguments, may not run, or undefined
 * when the bash rules allow it without asking (nobody is there to answer an ask).
 */
export const shellRefusal = (command: string, ruleset: PermissionRuleset): Effect.Effect<string | undefined> =>
  decideCommand(command, ruleset).pipe(
    Effect.map((decision) =>
      decision === undefined || decision.rule.action === "allow"
        ? undefined
        : `the shell command ${JSON.stringify(command)} built from the arguments may not run for a request: bash ` +
          `${JSON.stringify(decision.pattern)} is decided by ${describeRule(decision.rule)}` +
          `${decision.unreadable === undefined ? "" : ` (the rules cannot read it: ${decision.unreadable})`}; ` +
          "only a rule that allows it lets a request run it"
    ),
    Effect.orElseSucceed(() => `the shell command ${JSON.stringify(command)} built from the arguments could not be parsed`)
  )

/**
 * A `file://` part: decided by the read tool's rules before a byte is read (only an `allow` lets it
 * through, since nobody is there to answer an ask), then read from the real path that was checked.
 */
const filePart = (part: Extract<PartInput, { type: "file" }>, instance: InstanceInfo, ruleset: PermissionRuleset) =>
  Effect.gen(function*() {
    const filename = part.filename !== undefined ? { filename: part.filename } : {}
    if (/^(data|https?):/i.test(part.url)) return { type: "file", mime: part.mime, url: part.url, ...filename } satisfies PromptPartInput
    if (!part.url.startsWith("file:")) {
      return yield* BadRequestError.of(`parts: file url must be file://, data: or http(s): — got ${part.url.slice(0, 40)}`)
    }
    const absolute = yield* Effect.try(() => path.resolve(instance.directory, fileURLToPath(part.url))).pipe(
      Effect.mapError(() => BadRequestError.of(`parts: not a valid file url: ${part.url}`))
    )
    // Refused before "not found", so a refusal says nothing about what exists outside the project.
    const stat = statOf(absolute)
    const refusal = readRefusal(absolute, stat?.isDirectory() ? "directory" : "file", instance, ruleset)
    if (refusal) return yield* ForbiddenError.of(`parts: ${refusal.message}`, { path: refusal.path, rule: refusal.rule })
    if (!stat) return yield* BadRequestError.of(`parts: file not found: ${absolute}`)
    if (!stat.isDirectory() && stat.size > MAX_ATTACHMENT_BYTES) return yield* BadRequestError.of(`parts: file too large (over 10 MB): ${absolute}`)
    const real = realPath(absolute)
    return yield* Effect.try((): PromptPartInput => {
      if (stat.isDirectory()) {
        const entries = fs.readdirSync(real, { withFileTypes: true })
          .map((entry) => entry.name + (entry.isDirectory() ? "/" : ""))
          .sort()
        return { type: "text", synthetic: true, text: `<directory path="${absolute}">\n${entries.join("\n")}\n</directory>` }
      }
      const mime = attachmentMime(absolute)
      if (mime) {
        const data = fs.readFileSync(real).toString("base64")
        return { type: "file", mime, url: `data:${mime};base64,${data}`, filename: part.filename ?? path.basename(absolute) }
      }
      return { type: "text", synthetic: true, text: `<file path="${absolute}">\n${fs.readFileSync(real, "utf8")}\n</file>` }
    }).pipe(Effect.mapError((error) => BadRequestError.of(`parts: cannot read ${absolute}: ${(error.error as Error).message}`)))
  })
