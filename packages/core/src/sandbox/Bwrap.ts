/**
 * The bubblewrap command line of one sandboxed process. Pure: the service decides the layout
 * and what this machine supports, this module only spells it.
 *
 * Namespaces: user (so an unprivileged user can mount, and root gets no capabilities), mount
 * (the filesystem view), pid (the command sees and signals only its own processes; a fresh
 * /proc, without which /proc/<pid>/root of any process of the same user would lead out), ipc,
 * and net when the network is limited. No `--new-session`: the bash tool starts the sandbox
 * in a session of its own without a terminal (so TIOCSTI has nothing to inject into) and
 * stops a command by signalling its process group, which the processes inside stay in. No
 * `--die-with-parent`: like an unsandboxed command's background jobs, a sandbox's outlive the
 * tool call (and the runtime) until they end or their group is killed.
 */
import type { Layout } from "./Layout.js"

/** The port the proxy bridge listens on inside a sandbox's own network namespace. */
export const PROXY_PORT = 3128

/**
 * Starts the proxy bridge inside the sandbox's network namespace (`$1` the port, `$2` the proxy's
 * socket) and waits until it listens (without a fresh /proc that cannot be seen: a short pause).
 */
const BRIDGE = [
  "port=$1 socket=$2; shift 2",
  'socat TCP-LISTEN:"$port",bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$socket" </dev/null >/dev/null 2>&1 &',
  "bridge=$!",
  "hex=$(printf '%04X' \"$port\") i=0",
  "if [ -r /proc/net/tcp ]; then",
  "  while [ $i -lt 500 ]; do",
  '    while read -r _ local _ state _; do case "$local $state" in *":$hex 0A") break 2;; esac; done </proc/net/tcp',
  "    i=$((i+1)); sleep 0.01",
  "  done",
  "else sleep 0.1; fi"
]

/**
 * With a proxy bridge (bubblewrap reports and keeps the sandbox alive by itself otherwise): starts
 * the bridge, runs the command, reports on fd 3 (`r` once the sandbox is up, `e <status>` when the
 * command's shell has exited), stays while the command's background jobs live, then stops the
 * bridge, which would otherwise keep bubblewrap's init, and so the sandbox, alive for ever.
 */
export const KEEPER_WAIT = [
  "printf 'r\\n' >&3",
  ...BRIDGE,
  '"$@" 3>&-',
  "status=$?",
  "printf 'e %s\\n' \"$status\" >&3",
  "exec 3>&- >/dev/null 2>&1 </dev/null",
  "while :; do",
  "  n=0",
  "  for p in /proc/[0-9]*; do",
  '    read -r name <"$p/comm" 2>/dev/null || continue',
  '    [ "$name" = socat ] || n=$((n+1))',
  "  done",
  '  [ "$n" -le 2 ] && break',
  "  sleep 0.2",
  "done",
  'kill "$bridge" 2>/dev/null',
  'exit "$status"'
].join("\n")

/**
 * With a proxy bridge: starts it, runs the program (an MCP server, or a command where the keeper
 * cannot see background jobs), then stops the bridge once the program has ended on its own.
 */
export const KEEPER_EXEC = [...BRIDGE, '"$@"', "status=$?", 'kill "$bridge" 2>/dev/null', 'exit "$status"'].join("\n")

export interface BwrapOptions {
  readonly layout: Layout
  /** An empty directory, bound read-only over each placeholder. */
  readonly empty: string
  readonly cwd: string
  /** Mount a fresh /proc (needs the pid namespace to allow it); else an empty tmpfs hides the host's. */
  readonly proc: boolean
  /** Unshare the network (no network, or only through the proxy). */
  readonly isolateNetwork: boolean
  /** The proxy's unix socket, bridged to `PROXY_PORT` inside. */
  readonly proxySocket?: string
  /**
   * `wait`: a shell command whose exit status is reported on fd 3 while the sandbox lives on for its
   * background jobs, until fd 4 closes; `exec`: a long-lived program, nothing reported.
   */
  readonly keeper: "wait" | "exec"
  /** The program and its arguments. */
  readonly argv: ReadonlyArray<string>
  /** The POSIX shell that runs the keeper. */
  readonly sh?: string
  /**
   * A file bubblewrap's init holds a lock on while the sandbox lives: the manifest of the placeholders
   * it relies on (Placeholders.ts), so other processes know from /proc/locks that it still runs.
   */
  readonly lockFile?: string
}

export const bwrapArgs = (options: BwrapOptions): Array<string> => {
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", ...(options.proc ? ["--proc", "/proc"] : ["--tmpfs", "/proc"])]
  for (const mount of options.layout.mounts) {
    if (mount.kind === "writable") args.push("--bind", mount.path, mount.path)
    else if (mount.kind === "readonly") args.push("--ro-bind", mount.path, mount.path)
    else args.push("--ro-bind", options.empty, mount.path)
  }
  args.push("--unshare-user", "--unshare-pid", "--unshare-ipc")
  if (options.isolateNetwork) args.push("--unshare-net")
  // bubblewrap's own init (pid 1) reaps and waits for every process of the sandbox, so background
  // jobs outlive their command without a keeper process; it reports the command's exit code on the
  // status fd and holds the sync fd open until the last process of the sandbox has ended.
  if (bwrapReports(options)) args.push("--json-status-fd", String(STATUS_FD), "--sync-fd", String(SYNC_FD))
  if (options.lockFile !== undefined) args.push("--lock-file", options.lockFile)
  args.push("--cap-drop", "ALL", "--chdir", options.cwd, "--")
  if (options.proxySocket === undefined) return [...args, ...options.argv]
  const sh = options.sh ?? "/bin/sh"
  const proxy = [String(PROXY_PORT), options.proxySocket]
  const keeper = options.keeper === "wait" && options.proc ? KEEPER_WAIT : KEEPER_EXEC
  return [...args, sh, "-c", keeper, "agent-sandbox", ...proxy, ...options.argv]
}

/** The fd on which the command's status comes (`statusFd` of a launch). */
export const STATUS_FD = 3
/** The fd that stays open while any process of the sandbox lives (`syncFd` of a launch). */
export const SYNC_FD = 4

/** bubblewrap itself reports the status and the sandbox's end (no keeper shell). */
export const bwrapReports = (options: Pick<BwrapOptions, "keeper" | "proxySocket">): boolean =>
  options.keeper === "wait" && options.proxySocket === undefined

/** The keeper shell reports the status (the proxy bridge needs it, and a fresh /proc to see the jobs). */
export const keeperReports = (options: Pick<BwrapOptions, "keeper" | "proxySocket" | "proc">): boolean =>
  options.keeper === "wait" && options.proxySocket !== undefined && options.proc

/**
 * One line from the status fd: the keeper's `r` (up) and `e <status>`, or bubblewrap's JSON, whose
 * `exit-code` line comes only once the command ran (a sandbox that failed to start reports none).
 */
export const readStatusLine = (line: string): { readonly ready: true; readonly exit?: number } | undefined => {
  if (line === "r") return { ready: true }
  if (line.startsWith("e ")) return { ready: true, exit: Number(line.slice(2)) }
  const code = /"exit-code"\s*:\s*(-?\d+)/.exec(line)?.[1]
  return code === undefined ? undefined : { ready: true, exit: Number(code) }
}

/** The variables that send proxy-aware programs (curl, git, npm, pip, cargo, ...) through the bridge. */
export const proxyEnv = (): Record<string, string> => {
  const url = `http://127.0.0.1:${PROXY_PORT}`
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    all_proxy: url,
    npm_config_proxy: url,
    npm_config_https_proxy: url
  }
}

/** Variables that would send a request around the proxy, where nothing is reachable. */
export const NO_PROXY_VARIABLES = ["NO_PROXY", "no_proxy"] as const
