import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { InstanceInfo } from "../runtime/Instance.js"
import type { ToolContext } from "./Tool.js"

/** Links followed by hand before giving up (the kernel's own limit is 40). */
const MAX_LINKS = 40

/** The target of `file` when it is a symlink, else undefined. */
const linkTarget = (file: string): string | undefined => {
  try {
    return fs.readlinkSync(file)
  } catch {
    return undefined
  }
}

/**
 * The real location of `target`: symlinks resolved, for a path that does not exist yet the
 * nearest existing ancestor resolved and the rest appended. A link inside the project that
 * points outside it is therefore seen as outside, also when what it points to does not exist
 * yet (writing through such a link creates the file where it points).
 */
export const realPath = (target: string): string => resolveReal(path.resolve(target), 0)

const resolveReal = (absolute: string, links: number): string => {
  let existing = absolute
  const rest: Array<string> = []
  for (;;) {
    try {
      return path.join(fs.realpathSync.native(existing), ...[...rest].reverse())
    } catch {
      const link = links < MAX_LINKS ? linkTarget(existing) : undefined
      if (link !== undefined) {
        return resolveReal(path.join(path.resolve(path.dirname(existing), link), ...[...rest].reverse()), links + 1)
      }
      const parent = path.dirname(existing)
      if (parent === existing) return absolute
      rest.push(path.basename(existing))
      existing = parent
    }
  }
}

/** Whether `child` is `parent` or lies below it (plain path arithmetic, no symlinks resolved). */
export const isWithin = (child: string, parent: string): boolean => {
  const relative = path.relative(parent, child)
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative))
}

/** Whether `target` (after resolving symlinks) lies in the working directory or the work tree. */
export const isInsideProject = (instance: InstanceInfo, target: string): boolean => {
  const real = realPath(target)
  const roots = [instance.directory, instance.worktree].map(realPath)
  return roots.some((root) => isWithin(real, root))
}

/**
 * Asks `external_directory` before a tool touches a path outside the project, checking the
 * path as given and its real path (a link inside the project pointing out is outside; a path
 * outside that leads in through a link is outside as given). One pattern per outside form,
 * `<dir>/*`, where dir is the directory itself or the file's parent.
 */
export const guard = (
  context: ToolContext,
  instance: InstanceInfo,
  target: string,
  kind: "file" | "directory" = "file"
) =>
  Effect.suspend(() => {
    const real = realPath(target)
    const roots = [instance.directory, instance.worktree]
    const realRoots = roots.map(realPath)
    // The given path may spell a root through its real path (macOS's /private/tmp for /tmp).
    const givenInside = [...roots, ...realRoots].some((root) => isWithin(target, root))
    const realInside = realRoots.some((root) => isWithin(real, root))
    const outside = [...new Set([...(givenInside ? [] : [target]), ...(realInside ? [] : [real])])]
    if (outside.length === 0) return Effect.void
    const dirOf = (file: string) => (kind === "directory" ? file : path.dirname(file))
    const globs = [...new Set(outside.map((file) => path.join(dirOf(file), "*")))]
    const shown = outside.includes(real) ? real : target
    return context.ask({
      permission: "external_directory",
      patterns: globs,
      always: globs,
      metadata: { filepath: shown, parentDir: dirOf(shown) }
    })
  })

/** A tool's path argument, absolute: relative paths are taken from the working directory. */
export const resolvePath = (instance: InstanceInfo, input: string): string =>
  path.isAbsolute(input) ? path.normalize(input) : path.resolve(instance.directory, input)

/** The path as rules see it: relative to the work tree when inside it, else absolute. */
export const relativeToWorktree = (instance: InstanceInfo, absolute: string): string => {
  const relative = path.relative(instance.worktree, absolute)
  return relative.startsWith("..") || path.isAbsolute(relative) ? absolute : relative
}
