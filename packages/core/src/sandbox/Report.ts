/**
 * What the sandbox blocked, told to the model. Writes are read from the command's output (the
 * kernel answers a write to a read-only path with EROFS, "Read-only file system", which every
 * tool prints with the path); hosts the proxy refused are known exactly; with no network at
 * all, a failed name lookup or connection in the output is taken for the sandbox's doing.
 */
import * as path from "node:path"
import { isWithin, type Mount } from "./Layout.js"
import { describeNetwork, type SandboxSettings } from "./Settings.js"

export interface Blocked {
  readonly kind: "write" | "network"
  /** The path, `host:port`, or `network` when the output does not say which host. */
  readonly target: string
}

const READ_ONLY = /read-only file system|EROFS/i
/** What a protected path (a mount point) answers to a removal or rename, and a placeholder (an empty directory) to a write. */
const MOUNT_POINT = /is a directory|EISDIR|device or resource busy|EBUSY|directory not empty|ENOTEMPTY/i
// \u2018 and \u2019 are the quotes coreutils print in UTF-8 locales (escaped: the bundle stays Latin-1).
const QUOTED = /['"\u2018\u2019`]([^'"\u2018\u2019`\n]+)['"\u2018\u2019`]/g
const BARE = /(?:^|[\s:(])((?:\/|\.{1,2}\/|\.git\b)[^\s:'"\u2018\u2019`,)]*)/g
/** `name: <error>`, as shells print a failed redirect. */
const BEFORE_COLON = /(?:^|[\s'"\u2018\u2019`])([^\s:'"\u2018\u2019`]+)['"\u2018\u2019`]?:\s*$/

const usable = (candidate: string) => candidate.length > 0 && !/\s/.test(candidate) && !/^[a-z]+:\/\//i.test(candidate)

/** Paths named on one line: quoted ones first, then bare ones, each in order. */
const pathsIn = (text: string): Array<string> =>
  [...[...text.matchAll(QUOTED)].map((match) => match[1]!.trim()), ...[...text.matchAll(BARE)].map((match) => match[1]!)]
    .filter(usable)

/**
 * The path an error line is about: the one right before the error ("bash: x: Read-only file
 * system", "touch: cannot touch 'x': ..."), else the first after it ("[Errno 30] Read-only file
 * system: 'x'", "EROFS: read-only file system, open 'x'").
 */
const subjectOf = (line: string, at: number): string | undefined => {
  const before = line.slice(0, at)
  const named = BEFORE_COLON.exec(before)?.[1]
  // A word without a dot or slash ("Error", "line 1") is not a path here.
  if (named !== undefined && usable(named) && /[./]/.test(named)) return named
  return pathsIn(before).at(-1) ?? pathsIn(line.slice(at))[0]
}

/**
 * Writes the output shows were refused by the sandbox: EROFS anywhere (every path outside the
 * writable ones is mounted read-only), or a protected mount point refusing a removal or a write.
 */
export const blockedWrites = (output: string, cwd: string, mounts: ReadonlyArray<Mount>): Array<Blocked> => {
  const guarded = mounts.filter((mount) => mount.kind !== "writable").map((mount) => mount.path)
  const targets: Array<string> = []
  const add = (target: string) => void (targets.includes(target) || targets.push(target))
  for (const line of output.split("\n")) {
    const readOnly = READ_ONLY.exec(line)
    if (readOnly) {
      const subject = subjectOf(line, readOnly.index)
      add(subject === undefined ? "a read-only path" : path.resolve(cwd, subject))
      continue
    }
    if (guarded.length === 0 || !MOUNT_POINT.test(line)) continue
    const hit = pathsIn(line).concat(BEFORE_COLON.exec(line.slice(0, MOUNT_POINT.exec(line)!.index))?.[1] ?? [])
      .map((candidate) => path.resolve(cwd, candidate))
      .find((file) => guarded.some((mount) => isWithin(file, mount)))
    if (hit !== undefined) add(hit)
  }
  return targets.map((target) => ({ kind: "write", target }))
}

const NETWORK_FAILURES: ReadonlyArray<RegExp> = [
  /Could not resolve (?:host|proxy): ([^\s;,]+)/i,
  /getaddrinfo (?:ENOTFOUND|EAI_AGAIN) ([^\s;,]+)/i,
  /Failed to resolve ['"]?([^'"\s]+)/i,
  /unable to resolve host ([^\s:]+)/i,
  /Temporary failure in name resolution/i,
  /Name or service not known/i,
  /Network is unreachable|ENETUNREACH/i,
  /No address associated with hostname/i,
  /Failed to connect to (\S+ port \d+)/i,
  /connect ECONNREFUSED (\S+)/i,
  /Connection refused|Couldn't connect to server/i
]

/**
 * Failed lookups and connections in the output, taken as the sandbox's doing when the network is
 * cut off (in its own network namespace even the host's local servers refuse).
 */
export const networkFailures = (output: string): Array<Blocked> => {
  const hosts: Array<string> = []
  for (const line of output.split("\n")) {
    for (const pattern of NETWORK_FAILURES) {
      const match = pattern.exec(line)
      if (!match) continue
      const host = (match[1] ?? "network").replace(/[.'"]+$/, "").replace(/ port /, ":")
      if (!hosts.includes(host)) hosts.push(host)
      break
    }
  }
  // A named host says more than the bare "network" of a generic line.
  const named = hosts.filter((host) => host !== "network")
  return (named.length > 0 ? named : hosts).map((target) => ({ kind: "network", target }))
}

const list = (items: ReadonlyArray<string>) => items.slice(0, 5).join(", ") + (items.length > 5 ? ` and ${items.length - 5} more` : "")

/**
 * The note appended to the tool result: what was blocked, what the sandbox allows, and the way
 * out (`unsandboxed: true`, which the user approves, or a config change the user makes).
 */
export const notice = (blocked: ReadonlyArray<Blocked>, settings: SandboxSettings): string => {
  const writes = blocked.filter((entry) => entry.kind === "write").map((entry) => entry.target)
  const hosts = blocked.filter((entry) => entry.kind === "network").map((entry) => entry.target)
  const lines: Array<string> = []
  if (writes.length > 0) {
    lines.push(
      `The sandbox blocked writing to ${list(writes)}: ${
        settings.mode === "read-only" ? "this agent's sandbox is read-only" : "only the project, the temp dirs and the configured writable paths may be written"
      }, and the project's .git and agent config (agent.json, opencode.json, .agent/, .opencode/, .claude/, AGENTS.md) stay read-only.`
    )
  }
  if (hosts.length > 0) {
    const which = hosts.filter((host) => host !== "network")
    lines.push(
      `The sandbox blocked ${which.length > 0 ? `a connection to ${list(which)}` : "network access"}; the network allowed to sandboxed commands: ${describeNetwork(settings.network)}.`
    )
  }
  lines.push(
    "If the command needs this (a package install that downloads, a commit that writes .git, ...), run it again with " +
      "`unsandboxed: true`: the user is asked to approve running that one command outside the sandbox. Do not try to get " +
      "around the sandbox in other ways."
  )
  return `<sandbox>\n${lines.join("\n")}\n</sandbox>`
}
