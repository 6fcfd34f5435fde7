import type { ProjectID } from "@agent/domain"
import { Context, Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/**
 * The directory the runtime works in and the places it reads and writes. Everything that
 * depends on the user's machine (cwd, home, env) goes through here, so tests can point
 * the whole runtime at a temp dir.
 */
export interface InstanceInfo {
  /** Where the user started the runtime. */
  readonly directory: string
  /** Root of the git work tree containing `directory`, or `directory` itself outside git. */
  readonly worktree: string
  readonly vcs: boolean
  readonly projectID: ProjectID
  readonly home: string
  readonly paths: {
    /** Global config dir: `$XDG_CONFIG_HOME/agent` or `~/.config/agent`. */
    readonly config: string
    /** Data dir: `$XDG_DATA_HOME/agent` or `~/.local/share/agent`. */
    readonly data: string
    /** Managed (enterprise) config dir: `AGENT_MANAGED_DIR` or `/etc/agent`. */
    readonly managed: string
    /** Scratch space the agent may always use: `<tmpdir>/agent`. */
    readonly tmp: string
  }
  readonly env: Readonly<Record<string, string | undefined>>
  readonly platform: NodeJS.Platform
}

export interface InstanceOptions {
  readonly directory?: string
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly home?: string
}

const findGitRoot = (start: string): string | undefined => {
  let dir = start
  for (;;) {
    if (fs.existsSync(path.join(dir, ".git"))) return dir
    const parent = path.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

export const makeInstanceInfo = (options: InstanceOptions = {}): InstanceInfo => {
  const env = options.env ?? process.env
  const home = options.home ?? env.HOME ?? os.homedir()
  const directory = path.resolve(options.directory ?? process.cwd())
  const gitRoot = findGitRoot(directory)
  const worktree = gitRoot ?? directory
  const configHome = env.XDG_CONFIG_HOME || path.join(home, ".config")
  const dataHome = env.XDG_DATA_HOME || path.join(home, ".local", "share")
  return {
    directory,
    worktree,
    vcs: gitRoot !== undefined,
    projectID: createHash("sha256").update(worktree).digest("hex").slice(0, 16) as ProjectID,
    home,
    paths: {
      config: path.join(configHome, "agent"),
      data: path.join(dataHome, "agent"),
      managed: env.AGENT_MANAGED_DIR || "/etc/agent",
      tmp: path.join(os.tmpdir(), "agent")
    },
    env,
    platform: process.platform
  }
}

export class Instance extends Context.Tag("@agent/core/Instance")<Instance, InstanceInfo>() {
  /** The process's own cwd, env and home. */
  static readonly layer: Layer.Layer<Instance> = Layer.sync(Instance, () => makeInstanceInfo())

  static readonly layerWith = (options: InstanceOptions): Layer.Layer<Instance> =>
    Layer.sync(Instance, () => makeInstanceInfo(options))

  static readonly make = (options: InstanceOptions) => Effect.sync(() => makeInstanceInfo(options))
}
