import * as fs from "node:fs"
import * as path from "node:path"
import type { InstanceInfo } from "../runtime/Instance.js"
import { isInsideProject, realPath } from "./ExternalDirectory.js"

// Paths outside the project: which of a parsed script's paths need `external_directory`.

/** Commands whose arguments are paths, checked against the project boundary. */
export const FILE_COMMANDS: ReadonlySet<string> = new Set([
  "cd", "chdir", "pushd", "popd", "rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat", "ln", "rmdir"
])

/** `~`, `~/x`, `$NAME/x` and `${NAME}/x` as the shell would see them; unknown variables are empty. */
export const expandPath = (arg: string, instance: InstanceInfo): string => {
  const home = instance.home
  let value = arg
  if (value === "~") value = home
  else if (value.startsWith("~/")) value = path.join(home, value.slice(2))
  return value.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_match, braced, bare) => {
    const name = (braced ?? bare) as string
    return name === "HOME" ? home : instance.env[name] ?? ""
  })
}

/** A chmod mode: octal (`755`) or symbolic (`u+x`, `-w`, `a=r,u+w`). */
const CHMOD_MODE = /^(?:[0-7]{1,4}|(?:[ugoa]*[-+=][rwxXstugo]*)(?:,[ugoa]*[-+=][rwxXstugo]*)*)$/

/** The arguments of a file command that name paths: flags, chmod modes and chown owners are skipped. */
export const pathArguments = (tokens: ReadonlyArray<string>): Array<string> => {
  const [name, ...args] = tokens
  if (name === undefined || !FILE_COMMANDS.has(name)) return []
  const paths: Array<string> = []
  let optionsEnded = false
  let modeSeen = name !== "chmod" || args.some((arg) => arg.startsWith("--reference"))
  let ownerSeen = name !== "chown" || args.some((arg) => arg.startsWith("--reference"))
  for (const arg of args) {
    if (arg === "") continue
    if (!modeSeen && CHMOD_MODE.test(arg)) {
      modeSeen = true
      continue
    }
    if (!optionsEnded) {
      if (arg === "--") {
        optionsEnded = true
        continue
      }
      if (arg.startsWith("-")) continue
      if ((name === "pushd" || name === "popd") && arg.startsWith("+")) continue
    }
    if (!ownerSeen) {
      ownerSeen = true
      continue
    }
    paths.push(arg)
  }
  // A bare `cd` goes home.
  if (args.length === 0 && (name === "cd" || name === "chdir")) paths.push("~")
  return paths
}

const isDirectory = (target: string): boolean => {
  try {
    return fs.statSync(target).isDirectory()
  } catch {
    return false
  }
}

/** `<dir>/*` for a path outside the project: the directory itself, or a file's parent. */
const globOf = (target: string): string => {
  const real = realPath(target)
  return path.join(isDirectory(real) ? real : path.dirname(real), "*")
}

/** Redirecting to these reaches no file of anybody's. */
const STREAM_DEVICES: ReadonlySet<string> = new Set(["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"])
const isStreamDevice = (file: string) => STREAM_DEVICES.has(file) || /^\/dev\/fd\/\d+$/.test(file)

/**
 * The `external_directory` patterns a script needs: the working directory when it lies outside
 * the project, every path argument of a file command that does, and every file it redirects to
 * or from that does (`> ../elsewhere/out.txt`; `/dev/null` and the standard streams are not
 * files). Relative paths are taken from `workdir`; symlinks are followed, so a link inside the
 * project that points out counts as outside.
 */
export const externalDirectories = (
  runs: ReadonlyArray<ReadonlyArray<string>>,
  options: { readonly instance: InstanceInfo; readonly workdir: string; readonly redirects?: ReadonlyArray<string> }
): Array<string> => {
  const { instance, workdir } = options
  const globs = new Set<string>()
  const check = (arg: string) => {
    const absolute = path.resolve(workdir, expandPath(arg, instance))
    if (!isStreamDevice(absolute) && !isInsideProject(instance, absolute)) globs.add(globOf(absolute))
  }
  if (!isInsideProject(instance, workdir)) globs.add(globOf(workdir))
  // `runs` holds what wrappers run too: `sudo rm /etc/x` checks `rm /etc/x`.
  for (const run of runs) for (const arg of pathArguments(run)) check(arg)
  for (const target of options.redirects ?? []) check(target)
  return [...globs]
}
