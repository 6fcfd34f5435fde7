/**
 * File search benchmark: glob (`**\/*.ts`) and grep (a regular expression) over a generated
 * tree of 20 000 files (nested directories, some excluded by .gitignore files), with ripgrep
 * (when `rg` is on PATH) and with the built-in walker. Prints the median of several runs.
 * Runs on the TypeScript sources, no build needed: `npx tsx scripts/bench/tools.ts`.
 * Options (env): BENCH_FILES (default 20000), BENCH_RUNS (default 5), KEEP=1 keeps the tree.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeInstanceInfo } from "../../packages/core/src/Instance.js"
import * as FileSearch from "../../packages/core/src/tools/FileSearch.js"

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

const measure = async <A>(run: () => Promise<A>, size: (result: A) => number) => {
  const warm = await time(run)
  const samples: Array<number> = []
  for (let i = 0; i < RUNS; i++) samples.push((await time(run)).ms)
  return { median: median(samples), min: Math.min(...samples), count: size(warm.result) }
}

const main = async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-tools-"))
  const started = Date.now()
  generate(root, FILES)
  console.log(`generated ${FILES} files in ${root} (${Date.now() - started} ms)`)

  const instance = makeInstanceInfo({ directory: root, env: process.env })
  const engines: Array<FileSearch.Engine> = ["builtin"]
  if (FileSearch.findRipgrep(process.env.PATH)) engines.unshift("ripgrep")
  else console.log("rg is not on PATH: only the built-in engine is measured")

  const rows: Array<Record<string, string | number>> = []
  for (const engine of engines) {
    const search = FileSearch.make(instance, { engine })
    const cases: Array<[string, () => Promise<number>]> = [
      ["glob **/*.ts (all)", () => Effect.runPromise(search.files({ cwd: root, globs: ["**/*.ts"] })).then((r) => r.files.length)],
      [
        "glob **/*.ts (limit 100)",
        () => Effect.runPromise(search.files({ cwd: root, globs: ["**/*.ts"], limit: 100 })).then((r) => r.files.length)
      ],
      ["list all files", () => Effect.runPromise(search.files({ cwd: root })).then((r) => r.files.length)],
      [
        "grep function\\s+handle\\w+ (all)",
        () => Effect.runPromise(search.grep({ cwd: root, pattern: "function\\s+handle\\w+" })).then((r) => r.matches.length)
      ],
      [
        "grep TODO include *.ts",
        () => Effect.runPromise(search.grep({ cwd: root, pattern: "TODO", globs: ["*.ts"] })).then((r) => r.matches.length)
      ],
      [
        "grep const (limit 1000)",
        () => Effect.runPromise(search.grep({ cwd: root, pattern: "const", limit: 1000 })).then((r) => r.matches.length)
      ]
    ]
    for (const [name, run] of cases) {
      const result = await measure(run, (count) => count)
      rows.push({ engine, case: name, "median ms": result.median.toFixed(1), "min ms": result.min.toFixed(1), results: result.count })
    }
  }
  console.table(rows)
  if (process.env.KEEP !== "1") fs.rmSync(root, { recursive: true, force: true })
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
