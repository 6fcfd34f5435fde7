import type { PermissionRule, PermissionRuleset } from "@agent/domain"
import * as path from "node:path"
import type { InstanceInfo } from "../runtime/Instance.js"
import * as Permission from "../permission/Permission.js"
import { isInsideProject, isWithin, realPath } from "./ExternalDirectory.js"

/** Files over this size are refused as attachments (read tool, `-f`, `@file`, server file parts). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024

/** The file types sent to the model as attachments rather than text. */
const ATTACHMENT_TYPES: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".pdf": "application/pdf"
}

/** The media type of a file that goes to the model as an attachment (image or PDF), else undefined. */
export const attachmentMime = (file: string): string | undefined => ATTACHMENT_TYPES[path.extname(file).toLowerCase()]

/** Why a prompt may not have a file read for it: the check that did not allow it. */
export interface AttachmentRefusal {
  /** The path the check looked at: the real one when a symlink leads elsewhere. */
  readonly path: string
  readonly permission: "external_directory" | "read"
  readonly pattern: string
  /** The deciding rule (a default ask when none matched); its action is `ask` or `deny`. */
  readonly rule: PermissionRule
}

/**
 * Whether a file (or directory) may be read into a prompt that arrived over the API, decided
 * before anything is read, by the read tool's checks: `external_directory` for what lies outside
 * the project, then `read`, each on the path as given and on its real path (a link in the project
 * may point anywhere). Only `allow` passes: a request is not a person who can answer an ask.
 * `rulesets`: the session's rules with the enterprise policy last (`SessionLoop.rules`).
 */
export const attachmentAccess = (
  instance: InstanceInfo,
  target: string,
  kind: "file" | "directory",
  ...rulesets: ReadonlyArray<PermissionRuleset>
): AttachmentRefusal | undefined => {
  const given = path.resolve(instance.directory, target)
  const real = realPath(given)
  const check = (permission: AttachmentRefusal["permission"], pattern: string, at: string) => {
    const rule = Permission.evaluate(permission, pattern, ...rulesets)
    return rule.action === "allow" ? undefined : { path: at, permission, pattern, rule }
  }
  if (!isInsideProject(instance, given)) {
    const refused = check("external_directory", path.join(kind === "directory" ? real : path.dirname(real), "*"), real)
    if (refused) return refused
  }
  const realRoot = realPath(instance.worktree)
  const rulePath = (absolute: string, root: string) => (isWithin(absolute, root) ? path.relative(root, absolute) || "." : absolute)
  for (const [pattern, at] of [[rulePath(given, instance.worktree), given], [rulePath(real, realRoot), real]] as const) {
    const refused = check("read", pattern, at)
    if (refused) return refused
  }
  return undefined
}
