import { Instance, type InstanceInfo, makeInstanceInfo } from "@agent/core"
import { Effect, Layer, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export interface TestInstanceOptions {
  /**
   * Files to create, relative to the sandbox root, e.g. `project/agent.json`,
   * `home/.config/agent/agent.json`, `managed/agent.json`. Objects are written as JSON.
   */
  readonly files?: Readonly<Record<string, string | object>>
  /** Make `project/` a git work tree (a `.git` dir), default true. */
  readonly git?: boolean
  /** Working directory relative to the sandbox root (default `project`). */
  readonly cwd?: string
  /** Extra environment variables; the sandbox's XDG and managed dirs are always set. */
  readonly env?: Readonly<Record<string, string>>
}

export interface Sandbox {
  readonly root: string
  readonly instance: InstanceInfo
  /** Absolute path of a sandbox-relative path. */
  readonly path: (relative: string) => string
  readonly write: (relative: string, content: string | object) => void
}

const write = (root: string) => (relative: string, content: string | object) => {
  const file = path.join(root, relative)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content, null, 2))
}

/**
 * A throwaway machine in a temp dir: `home/` (with XDG config and data dirs), `project/`
 * (a git work tree by default) and `managed/`, removed when the scope closes.
 */
export const sandbox = (options: TestInstanceOptions = {}): Effect.Effect<Sandbox, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-test-")))
      const home = path.join(root, "home")
      fs.mkdirSync(path.join(root, "project"), { recursive: true })
      fs.mkdirSync(home, { recursive: true })
      if (options.git ?? true) fs.mkdirSync(path.join(root, "project", ".git"))
      for (const [relative, content] of Object.entries(options.files ?? {})) write(root)(relative, content)
      const directory = path.join(root, options.cwd ?? "project")
      fs.mkdirSync(directory, { recursive: true })
      const instance = makeInstanceInfo({
        directory,
        home,
        env: {
          HOME: home,
          PATH: process.env.PATH,
          XDG_CONFIG_HOME: path.join(home, ".config"),
          XDG_DATA_HOME: path.join(home, ".local", "share"),
          AGENT_MANAGED_DIR: path.join(root, "managed"),
          ...options.env
        }
      })
      return { root, instance, path: (relative: string) => path.join(root, relative), write: write(root) }
    }),
    // Retried: a process the test started (a snapshot's git under an agent just killed) may still be
    // writing in it for a moment, and a removal racing it fails with ENOTEMPTY.
    ({ root }) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }))
  )

/** An `Instance` layer over a fresh sandbox. */
export const layer = (options: TestInstanceOptions = {}): Layer.Layer<Instance> =>
  Layer.scoped(Instance, Effect.map(sandbox(options), (box) => box.instance))
