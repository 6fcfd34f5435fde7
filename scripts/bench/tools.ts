/**
 * Tools benchmark, printed as tables:
 * - file search: glob (`**\/*.ts`) and grep (regular expressions) over a generated tree of 20 000
 *   files (nested directories, some excluded by .gitignore files), with ripgrep and with the
 *   built-in walker: the search engine alone, and the `glob` / `grep` tools as the model calls
 *   them (engine + newest-first sort + output). ripgrep is the `rg` on PATH, else Debian's
 *   package fetched once into a cache dir (as the tests do); both engines must agree on the counts.
 * - bash command parsing (tree-sitter): time per command once the parser is loaded.
 * Median and min of several runs. Runs on the TypeScript sources, no build needed:
 * `pnpm bench:tools`. Options (env): BENCH_FILES (default 20000), BENCH_RUNS (default 5),
 * KEEP=1 keeps the tree.
 */
import { Agent, type MessageID, type SessionID } from "@agent/domain"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Instance, makeInstanceInfo } from "../../packages/core/src/runtime/Instance.js"
import * as Permission from "../../packages/core/src/permission/Permission.js"
import type * as Tool from "../../packages/core/src/tool/Tool.js"
import { parseCommand } from "../../packages/core/src/tool/BashParse.js"
import * as FileSearch from "../../packages/core/src/tool/FileSearch.js"
import * as Glob from "../../packages/core/src/tools/Glob.js"
import * as Grep from "../../packages/core/src/tools/Grep.js"
import { readDenied } from "../../packages/core/src/tool/PathRules.js"
import { ripgrepDir, withoutRipgrep } from "../../packages/core/test/tools/ripgrep.js"

const FILES = Number(process.env.BENCH_FILES ?? 20_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 5)

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/**
 * 20 top-level dirs × 10 × 10 leaf dirs, files spread over them; `dist/`, `generated/` and
 * `*.log` are ignored by the root .gitignore, `fixtures/` by nested ones (about 15% of files).
 */
const generate = (root: string, count: number) => {
  fs.mkdirSync(path.join(root, ".git"), { recursive: true })
  fs.writeFileSync(path.join(root, ".gitignore"), "dist/\ngenerated/\n*.log\n")
  const exts = [".ts", ".ts", ".js", ".md", ".json", ".log", ".tsx"]
  const tops = Array.from({ length: 20 }, (_, i) => (i === 3 ? "dist" : i === 7 ? "generated" : `pkg${i}`))
  for (let i = 0; i < count; i++) {
    const top = tops[i % tops.length]!
    const mid = `mod${Math.floor(i / 20) % 10}`
    const leaf = i % 13 === 0 ? "fixtures" : `part${Math.floor(i / 200) % 10}`
    const dir = path.join(root, top, mid, leaf)
    if (i < 2000 && !fs.existsSync(path.join(root, top, mid, ".gitignore"))) {
      fs.mkdirSync(path.join(root, top, mid), { recursive: true })
      fs.writeFileSync(path.join(root, top, mid, ".gitignore"), "fixtures/\n")
    }
    fs.mkdirSync(dir, { recursive: true })
    const lines = [
      `// file ${i}`,
      i % 17 === 0 ? `export function handleRequest${i}(input: string) {` : `export const value${i} = ${i}`,
      "  return input.trim()",
      i % 50 === 0 ? "// TODO: remove this" : "}",
      ...Array.from({ length: 20 }, (_, n) => `const filler${n} = "${"x".repeat(n * 3)}"`)
    ]
    fs.writeFileSync(path.join(dir, `file${i}${exts[i % exts.length]}`), lines.join("\n"))
  }
}

const time = async <A>(run: () => Promise<A>): Promise<{ ms: number; result: A }> => {
  const start = process.hrtime.bigint()
  const result = await run()
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, result }
}

const measure = async <A, S>(run: () => Promise<A>, size: (result: A) => S) => {
  const warm = await time(run)
  const samples: Array<number> = []
  for (let i = 0; i < RUNS; i++) samples.push((await time(run)).ms)
  return { median: median(samples), min: Math.min(...samples), count: size(warm.result) }
}

/** A tool context that allows everything. */
const context: Tool.ToolContext = {
  sessionID: "ses_bench" as SessionID,
  messageID: "msg_bench" as MessageID,
  callID: "call_bench",
  agent: new Agent({ name: "build", mode: "primary", native: true, permission: [], options: {} }),
  abort: new AbortController().signal,
  ask: () => Effect.void,
  rules: [],
  metadata: () => Effect.void
}

/** A read rule that can deny, so searches check every file they find (by its path and its real path). */
const denyingRules = Permission.fromConfig({ "*": "allow", read: { "*secret*": "deny" } })

const firstLine = (text: string) => text.split("\n")[0]!

const main = async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-tools-"))
  const started = Date.now()
  generate(root, FILES)
  console.log(`generated ${FILES} files in ${root} (${Date.now() - started} ms)`)

  const rgDir = ripgrepDir()
  console.log(`ripgrep: ${path.join(rgDir, "rg")}`)
  const instances: Record<FileSearch.Engine, ReturnType<typeof makeInstanceInfo>> = {
    ripgrep: makeInstanceInfo({ directory: root, env: { ...process.env, PATH: [rgDir, process.env.PATH].join(path.delimiter) } }),
    builtin: makeInstanceInfo({ directory: root, env: { ...process.env, PATH: withoutRipgrep(process.env.PATH) } })
  }

  const rows: Array<Record<string, string | number>> = []
  const counts = new Map<string, Map<FileSearch.Engine, number | string>>()
  const record = (engine: FileSearch.Engine, name: string, result: { median: number; min: number; count: number | string }) => {
    rows.push({ engine, case: name, "median ms": result.median.toFixed(1), "min ms": result.min.toFixed(1), results: result.count })
    counts.set(name, (counts.get(name) ?? new Map()).set(engine, result.count))
  }
  for (const engine of ["ripgrep", "builtin"] as const) {
    const instance = instances[engine]
    const search = FileSearch.make(instance)
    if (search.engine !== engine) throw new Error(`expected the ${engine} engine, got ${search.engine}`)
    const cases: Array<[string, () => Promise<number>]> = [
      ["engine: glob **/*.ts (all)", () => Effect.runPromise(search.files({ cwd: root, globs: ["**/*.ts"] })).then((r) => r.files.length)],
      [
        "engine: glob **/*.ts (limit 100)",
        () => Effect.runPromise(search.files({ cwd: root, globs: ["**/*.ts"], limit: 100 })).then((r) => r.files.length)
      ],
      ["engine: list all files", () => Effect.runPromise(search.files({ cwd: root })).then((r) => r.files.length)],
      [
        "engine: list all files, read deny rule",
        () =>
          Effect.runPromise(search.files({ cwd: root, exclude: readDenied(instance, denyingRules, root)! })).then((r) => r.files.length)
      ],
      [
        "engine: grep function\\s+handle\\w+ (all)",
        () => Effect.runPromise(search.grep({ cwd: root, pattern: "function\\s+handle\\w+" })).then((r) => r.matches.length)
      ],
      [
        "engine: grep TODO include *.ts",
        () => Effect.runPromise(search.grep({ cwd: root, pattern: "TODO", globs: ["*.ts"] })).then((r) => r.matches.length)
      ],
      [
        "engine: grep function\\s+handle\\w+, read deny rule",
        () =>
          Effect.runPromise(
            search.grep({ cwd: root, pattern: "function\\s+handle\\w+", exclude: readDenied(instance, denyingRules, root)! })
          ).then((r) => r.matches.length)
      ],
      [
        "engine: grep const (limit 1000)",
        () => Effect.runPromise(search.grep({ cwd: root, pattern: "const", limit: 1000 })).then((r) => r.matches.length)
      ]
    ]
    for (const [name, run] of cases) record(engine, name, await measure(run, (count) => count))

    // The tools as the model calls them: the search, the newest-first sort and the output.
    const [glob, grep] = await Effect.runPromise(
      Effect.all([Glob.make, Grep.make]).pipe(Effect.provideService(Instance, instance))
    )
    const toolCases: Array<[string, () => Promise<string>]> = [
      ["tool: glob **/*.ts", () => Effect.runPromise(glob.execute({ pattern: "**/*.ts" }, context)).then((r) => `${r.metadata?.count}`)],
      ["tool: glob pkg1/**/*.tsx", () => Effect.runPromise(glob.execute({ pattern: "pkg1/**/*.tsx" }, context)).then((r) => `${r.metadata?.count}`)],
      [
        "tool: grep function\\s+handle\\w+",
        () => Effect.runPromise(grep.execute({ pattern: "function\\s+handle\\w+" }, context)).then((r) => firstLine(r.output))
      ],
      [
        "tool: grep TODO include *.ts",
        () => Effect.runPromise(grep.execute({ pattern: "TODO", include: "*.ts" }, context)).then((r) => firstLine(r.output))
      ]
    ]
    for (const [name, run] of toolCases) record(engine, name, await measure(run, (summary) => summary))
  }
  console.table(rows)
  // Runs cut at a limit may pick different files; everything else must match.
  const disagreements = [...counts.entries()].filter(([name, byEngine]) =>
    !name.includes("limit") && !name.startsWith("tool: glob **") && byEngine.get("ripgrep") !== byEngine.get("builtin")
  )
  for (const [name, byEngine] of disagreements) {
    console.log(`MISMATCH ${name}: ripgrep ${byEngine.get("ripgrep")} vs built-in ${byEngine.get("builtin")}`)
  }

  // Bash command parsing: tree-sitter, once loaded.
  await Effect.runPromise(parseCommand("true"))
  const commands = [
    "git status",
    "git status && npm run build | tee log.txt",
    "for f in *.ts; do cat \"$f\" | grep -q TODO && echo \"$f\"; done > todo.txt 2>&1",
    Array.from({ length: 50 }, (_, i) => `echo ${i} && rm -rf build${i}`).join(" && ")
  ]
  const parseRows: Array<Record<string, string | number>> = []
  for (const command of commands) {
    const per = await measure(async () => {
      for (let i = 0; i < 200; i++) await Effect.runPromise(parseCommand(command))
      return 0
    }, () => 0)
    const patterns = (await Effect.runPromise(parseCommand(command))).patterns.length
    parseRows.push({
      command: command.length > 60 ? `${command.slice(0, 57)}...` : command,
      "median ms/parse": (per.median / 200).toFixed(3),
      "min ms/parse": (per.min / 200).toFixed(3),
      patterns
    })
  }
  console.table(parseRows)

  if (process.env.KEEP !== "1") fs.rmSync(root, { recursive: true, force: true })
  if (disagreements.length > 0) process.exit(1)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
