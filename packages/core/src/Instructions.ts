import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigService } from "./ConfigService.js"
import { Instance } from "./Instance.js"

/** Project files that hold instructions, in order of preference within one directory. */
const PROJECT_FILES = ["AGENTS.md", "CLAUDE.md", "CONTEXT.md"]

const readIfFile = (file: string): string | undefined => {
  try {
    return fs.statSync(file).isFile() ? fs.readFileSync(file, "utf8").trim() : undefined
  } catch {
    return undefined
  }
}

/**
 * Instruction files for the system prompt: the global `AGENTS.md` in the config dir, the
 * project's `AGENTS.md` (or `CLAUDE.md`) in every directory from the work-tree root down to
 * the working directory, and the files listed in `instructions`.
 */
export class InstructionLoader extends Context.Tag("@agent/core/InstructionLoader")<
  InstructionLoader,
  { readonly system: () => Effect.Effect<ReadonlyArray<string>> }
>() {
  static readonly layer: Layer.Layer<InstructionLoader, never, Instance | ConfigService> = Layer.effect(
    InstructionLoader,
    Effect.gen(function*() {
      const instance = yield* Instance
      const config = yield* (yield* ConfigService).get()

      const files = (): Array<string> => {
        const found: Array<string> = []
        const global = path.join(instance.paths.config, "AGENTS.md")
        if (readIfFile(global) !== undefined) found.push(global)
        const dirs: Array<string> = []
        for (let dir = instance.directory; ; dir = path.dirname(dir)) {
          dirs.unshift(dir)
          if (dir === instance.worktree || path.dirname(dir) === dir) break
        }
        for (const dir of dirs) {
          const file = PROJECT_FILES.map((name) => path.join(dir, name)).find((candidate) => readIfFile(candidate) !== undefined)
          if (file) found.push(file)
        }
        for (const entry of config.instructions ?? []) {
          if (/^https?:\/\//.test(entry)) continue
          const file = path.isAbsolute(entry) ? entry : path.join(instance.worktree, entry)
          if (!found.includes(file) && readIfFile(file) !== undefined) found.push(file)
        }
        return found
      }

      return {
        system: () =>
          Effect.sync(() =>
            files().flatMap((file) => {
              const text = readIfFile(file)
              return text ? [`Instructions from: ${file}\n${text}`] : []
            })
          )
      }
    })
  )

}
