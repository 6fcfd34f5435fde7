/**
 * What this machine supports: bubblewrap found on PATH, a sandbox that starts (user, mount and
 * pid namespaces), a fresh /proc, a network namespace, socat for the proxy bridge. Each is tried
 * for real with `/bin/true`, so the answer is what the kernel, AppArmor and the container
 * around us allow, not what should work.
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

export interface Capabilities {
  readonly platform: NodeJS.Platform
  /** The bwrap binary and its version. */
  readonly bwrap?: { readonly path: string; readonly version: string }
  readonly socat?: string
  /** A sandbox starts: user, mount, pid and ipc namespaces. */
  readonly works: boolean
  /** A fresh /proc can be mounted (else /proc is hidden inside). */
  readonly proc: boolean
  /** A network namespace can be made. */
  readonly network: boolean
  /** Why the sandbox cannot start, with what to do. */
  readonly problem?: string
  /** Smaller limitations (no /proc, no network namespace, no socat). */
  readonly notes: ReadonlyArray<string>
}

/** The first executable `name` on `PATH`. */
export const which = (name: string, searchPath: string | undefined): string | undefined => {
  for (const dir of (searchPath ?? "").split(path.delimiter)) {
    if (dir === "") continue
    const candidate = path.join(dir, name)
    try {
      fs.accessSync(candidate, fs.constants.X_OK)
      if (fs.statSync(candidate).isFile()) return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

const run = (file: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.async<{ readonly ok: boolean; readonly output: string }>((resume) => {
    const child = execFile(file, [...args], { env, timeout: 10_000 }, (error, stdout, stderr) =>
      resume(Effect.succeed({ ok: error === null, output: `${stdout}${stderr}`.trim() })))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const readNumber = (file: string): number | undefined => {
  try {
    const value = Number(fs.readFileSync(file, "utf8").trim())
    return Number.isFinite(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** What to do when user namespaces are refused, from the kernel's switches. */
const namespaceHints = (): Array<string> => {
  const hints: Array<string> = []
  if (readNumber("/proc/sys/kernel/unprivileged_userns_clone") === 0) {
    hints.push("unprivileged user namespaces are switched off (sysctl kernel.unprivileged_userns_clone=1 switches them on)")
  }
  if (readNumber("/proc/sys/user/max_user_namespaces") === 0) {
    hints.push("user namespaces are limited to 0 (sysctl user.max_user_namespaces)")
  }
  if (readNumber("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") === 1) {
    hints.push(
      "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later): allow bwrap with an AppArmor profile " +
        "(see docs/sandbox.md) or set sysctl kernel.apparmor_restrict_unprivileged_userns=0"
    )
  }
  if (fs.existsSync("/.dockerenv") || fs.existsSync("/run/.containerenv")) {
    hints.push("this looks like a container: its seccomp profile may refuse namespaces (Docker: --security-opt seccomp=unconfined, or run the agent outside)")
  }
  return hints
}

const BASE = ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"]

export const probe = (env: Readonly<Record<string, string | undefined>>): Effect.Effect<Capabilities> =>
  Effect.gen(function*() {
    const platform = process.platform
    if (platform !== "linux") {
      return {
        platform,
        works: false,
        proc: false,
        network: false,
        notes: [],
        problem: platform === "darwin"
          ? "the sandbox supports Linux only for now; macOS (sandbox-exec) is not yet supported"
          : `the sandbox supports Linux only; this is ${platform}`
      }
    }
    const searchPath = env.PATH
    const socat = which("socat", searchPath)
    const bwrap = which("bwrap", searchPath)
    if (bwrap === undefined) {
      return {
        platform,
        works: false,
        proc: false,
        network: false,
        notes: [],
        ...(socat ? { socat } : {}),
        problem: "bubblewrap (bwrap) is not installed or not on PATH (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
      }
    }
    const childEnv = { PATH: searchPath ?? "/usr/bin:/bin" }
    const version = (yield* run(bwrap, ["--version"], childEnv)).output.replace(/^bubblewrap\s*/i, "")
    const attempt = (extra: ReadonlyArray<string>) => run(bwrap, [...BASE, ...extra, "--", "/bin/true"], childEnv)
    const full = yield* attempt(["--proc", "/proc", "--unshare-net"])
    let proc = full.ok
    let network = full.ok
    let works = full.ok
    let failure = full.output
    if (!full.ok) {
      const withoutProc = yield* attempt(["--tmpfs", "/proc", "--unshare-net"])
      const withoutNet = yield* attempt(["--proc", "/proc"])
      const bare = withoutProc.ok || withoutNet.ok ? undefined : yield* attempt(["--tmpfs", "/proc"])
      works = withoutProc.ok || withoutNet.ok || bare?.ok === true
      proc = withoutNet.ok
      network = withoutProc.ok
      failure = bare?.output ?? failure
    }
    const notes: Array<string> = []
    if (works && !proc) notes.push("a fresh /proc cannot be mounted here: /proc is empty in the sandbox (programs that read it see nothing)")
    if (works && !network) notes.push("a network namespace cannot be made here: only `network: true` can be sandboxed")
    if (socat === undefined) notes.push("socat is not installed: a list of allowed hosts (`network: [...]`) cannot be bridged into the sandbox")
    return {
      platform,
      bwrap: { path: bwrap, version },
      ...(socat ? { socat } : {}),
      works,
      proc,
      network,
      notes,
      ...(works
        ? {}
        : {
          problem: [`bubblewrap cannot start a sandbox here: ${failure || "it failed without a message"}`, ...namespaceHints()].join("; ")
        })
    }
  }).pipe(Effect.withSpan("Sandbox.probe"))
