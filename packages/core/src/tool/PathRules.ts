import type { PermissionRuleset } from "@agent/domain"
import * as path from "node:path"
import type { InstanceInfo } from "../runtime/Instance.js"
import * as Permission from "../permission/Permission.js"
import { isWithin, realPath, relativeToWorktree } from "./ExternalDirectory.js"

/**
 * Path rules see every path twice: as the tool was given it and as it really is (symlinks
 * resolved in every component, a dangling link's target included). A tool asks with both, and
 * since a deny on any pattern denies, the stricter rule wins: `link.txt → secret.txt` is read
 * under the rules for `secret.txt` too.
 */

/** How a path appears in patterns: relative to the work tree when inside it (`read`, `edit`), or absolute (`list`). */
export type PatternForm = "worktree" | "absolute"

/** `real` (a resolved path) as rules see it; inside the work tree's real path it is relative to it. */
const realPattern = (instance: InstanceInfo, real: string, realWorktree: string): string =>
  isWithin(real, realWorktree) ? path.relative(realWorktree, real) : relativeToWorktree(instance, real)

/** The patterns a path rule is checked against for `absolute`: the path as given, then its real path when that differs. */
export const pathPatterns = (
  instance: InstanceInfo,
  absolute: string,
  form: PatternForm = "worktree"
): ReadonlyArray<string> => {
  const real = realPath(absolute)
  const patterns = form === "absolute"
    ? [absolute, real]
    : [relativeToWorktree(instance, absolute), realPattern(instance, real, realPath(instance.worktree))]
  return patterns[0] === patterns[1] ? [patterns[0]!] : patterns
}

/**
 * For a search or listing (`glob`, `grep`, `list`, `read` of a directory): whether the read rules
 * deny a file it found under `root`, by the path as found or by its real path. Undefined when no
 * read rule can deny anything, so a search then costs nothing extra. The search engines do not
 * follow links inside the tree, so below `root` (which may itself be or lie behind a link,
 * resolved once) a file's real path is `root`'s real path plus the rest: no system call per
 * file. `root` itself (grep pointed at a file) and entries the caller knows to be links are
 * resolved whole.
 */
export const readDenied = (
  instance: InstanceInfo,
  rules: PermissionRuleset,
  root: string
): ((file: string, isLink?: boolean) => boolean) | undefined => {
  const denies = Permission.denier("read", rules)
  if (denies === undefined) return undefined
  const realWorktree = realPath(instance.worktree)
  const worktreePrefix = withSep(instance.worktree)
  // `relativeToWorktree` without `path.relative`'s cost, for the common case of a file inside.
  const givenPattern = (file: string) =>
    file.startsWith(worktreePrefix) ? file.slice(worktreePrefix.length) : relativeToWorktree(instance, file)
  const wholeRealPattern = (file: string) => realPattern(instance, realPath(file), realWorktree)
  const rootPrefix = withSep(root)
  const realRoot = wholeRealPattern(root)
  // No link on the way to root: below it, a file's real path is the path as found.
  const rootIsReal = realRoot === givenPattern(root)
  return (file, isLink = false) => {
    if (denies(givenPattern(file))) return true
    if (isLink || !file.startsWith(rootPrefix)) return denies(wholeRealPattern(file))
    return !rootIsReal && denies(path.join(realRoot, file.slice(rootPrefix.length)))
  }
}

const withSep = (dir: string) => (dir.endsWith(path.sep) ? dir : dir + path.sep)

/** The note a search adds when it left files out. */
export const leftOutNote = (count: number): string =>
  `(${count} ${count === 1 ? "file" : "files"} left out: the read permission denies ${count === 1 ? "it" : "them"})`
