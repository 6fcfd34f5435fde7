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
/** What a placeholder (an empty read-only directory) answers to writes and removals. */
const PLACEHOLDER = /is a directory|EISDIR|device or resource busy|EBUSY|directory not empty|ENOTEMPTY/i
// \u2018 and \u2019 are the quotes coreutils print in UTF-8 locales (escaped: the bundle stays Latin-1).
const QUOTED = /['"\u2018\u2019`]([^'"\u2018\u2019`\n]+)['"\u2018\u2019`]/g
const BARE = /(?:^|[\s:(])((?:\/|\.{1,2}\/|\.git\b)[^\s:'"\u2018\u2019`,)]*)/g

const candidatesOf = (line: string): Array<string> => {
  const found = [...line.matchAll(QUOTED)].map((match) => match[1]!.trim())
  for (const match of line.matchAll(BARE)) found.push(match[1]!)
  return found.filter((candidate) => candidate.length > 0 && !/\s/.test(candidate) && !/^[a-z]+:\/\//i.test(candidate))
}

/** Writes the output shows were refused by the sandbox: EROFS anywhere, or a placeholder refusing a write. */
export const blockedWrites = (output: string, cwd: string, mounts: ReadonlyArray<Mount>): Array<Blocked> => {
  const placeholders = mounts.filter((mount) => mount.kind === "placeholder").map((mount) => mount.path)
  const targets: Array<string> = []
  for (const line of output.split("\n")) {
    const readOnly = READ_ONLY.test(line)
    if (!readOnly && !(placeholders.length > 0 && PLACEHOLDER.test(line))) continue
    const paths = candidatesOf(line).map((candidate) => path.resolve(cwd, candidate))
    const target = readOnly ? paths[0] : paths.find((file) => placeholders.some((holder) => isWithin(file, holder)))
    if (target !== undefined && !targets.includes(target)) targets.push(target)
    else if (readOnly && paths.length === 0 && !targets.includes("a read-only path")) targets.push("a read-only path")
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
