import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeInstanceInfo } from "../../src/runtime/Instance.js"
import type { InstanceInfo } from "../../src/runtime/Instance.js"

/** A fake machine in a temp dir: a home with XDG dirs, a managed dir and a git project. */
export interface Sandbox {
  readonly root: string
  readonly home: string
  /** `$XDG_CONFIG_HOME/agent`. */
  readonly globalDir: string
  readonly managedDir: string
  /** The git work tree root. */
  readonly project: string
  /** Where the runtime starts: `<project>/packages/app`. */
  readonly cwd: string
  /** Writes `content` to `file` (absolute, or relative to the sandbox root), creating dirs. */
  readonly write: (file: string, content: string | object) => string
  readonly instance: (env?: Readonly<Record<string, string>>, directory?: string) => InstanceInfo
}

export const makeSandbox = (): Sandbox => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-config-")))
  const home = path.join(root, "home")
  const project = path.join(root, "project")
  const cwd = path.join(project, "packages", "app")
  const managedDir = path.join(root, "managed")
  fs.mkdirSync(path.join(project, ".git"), { recursive: true })
  fs.mkdirSync(cwd, { recursive: true })
  fs.mkdirSync(home, { recursive: true })
  const write = (file: string, content: string | object) => {
    const full = path.isAbsolute(file) ? file : path.join(root, file)
    fs.mkdirSync(path.dirname(full), { recursive: true })
    fs.writeFileSync(full, typeof content === "string" ? content : JSON.stringify(content, null, 2))
    return full
  }
  const instance = (env: Readonly<Record<string, string>> = {}, directory: string = cwd) =>
    makeInstanceInfo({
      directory,
      home,
      env: {
        XDG_CONFIG_HOME: path.join(home, ".config"),
        XDG_DATA_HOME: path.join(home, ".local", "share"),
        AGENT_MANAGED_DIR: managedDir,
        ...env
      }
    })
  return {
    root,
    home,
    globalDir: path.join(home, ".config", "agent"),
    managedDir,
    project,
    cwd,
    write,
    instance
  }
}

/** A sandbox removed when the test's scope closes. */
export const sandbox = Effect.acquireRelease(Effect.sync(makeSandbox), (box) =>
  Effect.sync(() => fs.rmSync(box.root, { recursive: true, force: true })))

/** 1-based line of the first line of `text` containing `needle`. */
export const lineOf = (text: string, needle: string): number => {
  const index = text.split("\n").findIndex((line) => line.includes(needle))
  if (index < 0) throw new Error(`"${needle}" not in text`)
  return index + 1
}
