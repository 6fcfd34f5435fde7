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
 * Runs the command, then stays (as the namespace's only other process besides bwrap's init) while
 * its background jobs live, so they are not killed with the namespace. Reports on fd 3:
 * `r` once the sandbox is up, `e <status>` when the command's shell has exited. `$1` is the
 * proxy port (empty without a proxy), `$2` the proxy's socket, the rest the command.
 */
export const KEEPER_WAIT = [
  "printf 'r\\n' >&3",
  "port=$1 socket=$2; shift 2",
  'if [ -n "$port" ]; then',
  '  socat TCP-LISTEN:"$port",bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$socket" </dev/null >/dev/null 2>&1 &',
  "  hex=$(printf '%04X' \"$port\") i=0",
  "  while [ $i -lt 500 ]; do",
  '    while read -r _ local _ state _; do case "$local $state" in *":$hex 0A") break 2;; esac; done </proc/net/tcp',
  "    i=$((i+1)); sleep 0.01",
  "  done",
  "fi",
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
  '  [ "$n" -le 2 ] && exit "$status"',
  "  sleep 0.2",
  "done"
].join("\n")

/** Sets up the proxy bridge, if any, then becomes the program (an MCP server). */
export const KEEPER_EXEC = [
  "port=$1 socket=$2; shift 2",
  'if [ -n "$port" ]; then',
  '  socat TCP-LISTEN:"$port",bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$socket" </dev/null >/dev/null 2>&1 &',
  "  hex=$(printf '%04X' \"$port\") i=0",
  "  while [ $i -lt 500 ]; do",
  '    while read -r _ local _ state _; do case "$local $state" in *":$hex 0A") break 2;; esac; done </proc/net/tcp',
  "    i=$((i+1)); sleep 0.01",
  "  done",
  "fi",
  'exec "$@"'
].join("\n")

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
  /** `wait`: the bash tool's keeper (status on fd 3); `exec`: a long-lived program; `none`: run the argv directly. */
  readonly keeper: "wait" | "exec" | "none"
  /** The program and its arguments. */
  readonly argv: ReadonlyArray<string>
  /** The POSIX shell that runs the keeper. */
  readonly sh?: string
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
  args.push("--cap-drop", "ALL", "--chdir", options.cwd, "--")
  const sh = options.sh ?? "/bin/sh"
  const proxy = options.proxySocket === undefined ? ["", ""] : [String(PROXY_PORT), options.proxySocket]
  if (options.keeper === "wait") return [...args, sh, "-c", KEEPER_WAIT, "agent-sandbox", ...proxy, ...options.argv]
  if (options.keeper === "exec" || options.proxySocket !== undefined) {
    return [...args, sh, "-c", KEEPER_EXEC, "agent-sandbox", ...proxy, ...options.argv]
  }
  return [...args, ...options.argv]
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
