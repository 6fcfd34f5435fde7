import { Effect, Schema } from "effect"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import * as Prompts from "../runtime/Prompts.js"
import { Instance } from "../runtime/Instance.js"
import * as FileSearch from "../tool/FileSearch.js"
import * as Tool from "../tool/Tool.js"
import { guard, relativeToWorktree, resolvePath } from "../tool/ExternalDirectory.js"
import { leftOutNote, pathPatterns, readDenied } from "../tool/PathRules.js"
import { optionalPath } from "./Glob.js"

const TOOL = "list"

/** At most this many files per listing. */
export const LIMIT = 100

/** Directories that are almost never what the model is looking for: dependencies, builds, caches. */
export const DEFAULT_IGNORES: ReadonlyArray<string> = [
  "node_modules",
  ".git",
  "dist",
  "build",
  "out",
  "target",
  "vendor",
  "bin",
  "obj",
  ".venv",
  "venv",
  "__pycache__",
  ".pytest_cache",
  ".mypy_cache",
  ".tox",
  ".idea",
  ".vscode",
  "coverage",
  ".coverage",
  ".nyc_output",
  ".next",
  ".nuxt",
  ".turbo",
  ".cache",
  ".gradle",
  ".zig-cache",
  "zig-out",
  "tmp",
  "temp",
  "logs"
]

const Parameters = Schema.Struct({
  path: Schema.optional(
    Schema.String.annotations({
      description: "The directory to list, absolute or relative to the working directory. Leave it out to list the working directory."
    })
  ),
  ignore: Schema.optional(
    Schema.Array(Schema.String).annotations({
      description: 'Extra glob patterns to leave out, e.g. ["*.log", "fixtures/"]'
    })
  )
})

const fail = (detail: string) => new Tool.ToolExecutionError({ tool: TOOL, detail })

interface Node {
  readonly dirs: Map<string, Node>
  readonly files: Array<string>
}

const emptyNode = (): Node => ({ dirs: new Map(), files: [] })

/** The files as an indented tree under `root`: directories first, then files, each by name. */
export const renderTree = (root: string, files: ReadonlyArray<string>): string => {
  const tree = emptyNode()
  for (const file of files) {
    const parts = path.relative(root, file).split(path.sep)
    let node = tree
    for (const part of parts.slice(0, -1)) {
      let child = node.dirs.get(part)
      if (!child) {
        child = emptyNode()
        node.dirs.set(part, child)
      }
      node = child
    }
    node.files.push(parts[parts.length - 1]!)
  }
  const lines = [`${root.endsWith(path.sep) ? root : root + path.sep}`]
  const render = (node: Node, depth: number) => {
    const indent = "  ".repeat(depth)
    for (const name of [...node.dirs.keys()].sort()) {
      lines.push(`${indent}${name}/`)
      render(node.dirs.get(name)!, depth + 1)
    }
    for (const name of [...node.files].sort()) lines.push(`${indent}${name}`)
  }
  render(tree, 1)
  return lines.join("\n")
}

/** `list`: a tree of the files under a directory, minus ignored ones. Needs the `Instance`. */
export const make: Effect.Effect<Tool.AnyTool, never, Instance> = Effect.gen(function*() {
  const instance = yield* Instance
  const search = FileSearch.make(instance)
  return Tool.make({
    id: TOOL,
    fileEffects: "none",
    description: Prompts.read("tool/list.txt"),
    parameters: Parameters,
    execute: (params, context) =>
      Effect.gen(function*() {
        const dir = resolvePath(instance, optionalPath(params.path) ?? instance.directory)
        const stat = yield* Effect.promise(() => fsp.stat(dir).catch(() => undefined))
        if (!stat) return yield* fail(`Directory not found: ${dir}`)
        if (!stat.isDirectory()) return yield* fail(`Not a directory: ${dir}. Use the read tool to read a file.`)
        yield* guard(context, instance, dir, "directory")
        yield* context.ask({ permission: TOOL, patterns: pathPatterns(instance, dir, "absolute"), always: ["*"], metadata: { path: dir } })

        const globs = [
          ...DEFAULT_IGNORES.map((name) => `!${name}/`),
          ...(params.ignore ?? []).filter((glob) => glob.trim() !== "").map((glob) => `!${glob}`)
        ]
        // Files the agent may not read are not shown, only counted.
        const exclude = readDenied(instance, context.rules, dir)
        const result = yield* search
          .files({ cwd: dir, globs, limit: LIMIT, signal: context.abort, ...(exclude ? { exclude } : {}) })
          .pipe(Effect.mapError((error) => fail(error.message)))

        let output = renderTree(dir, result.files)
        if (result.files.length === 0) output += "\n  (no files)"
        if (result.truncated) {
          output += `\n\n(Showing the first ${LIMIT} files. List a subdirectory, add ignore patterns, or use glob to see the rest.)`
        }
        if (result.excluded > 0) output += `\n\n${leftOutNote(result.excluded)}`
        return {
          title: relativeToWorktree(instance, dir) || path.basename(dir),
          output,
          metadata: {
            count: result.files.length,
            truncated: result.truncated,
            ...(result.excluded > 0 ? { leftOut: result.excluded } : {})
          }
        }
      })
  })
})
