// Checks the import structure of packages/*/src (run by `pnpm typecheck`; docs/architecture.md):
// - no import cycles between files: static imports count, type-only ones included (they couple
//   files as much); `import("...")` does not, it is how the CLI loads a command's code lazily
//   (the command file loads its implementation, which imports the command's input type);
// - in packages/core/src, no cycles between subsystem folders.
// Imports name the file that holds what they use, not a folder's index.ts: under code splitting,
// esbuild assigns every module a barrel re-exports to each chunk that imports the barrel, so
// `agent session list` loaded the model library once SessionChanges imported tool/index.ts.
// Prints each problem and exits with 1 when there is any.
import { execSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const ts = createRequire(path.join(root, "package.json"))("typescript")
const core = path.join(root, "packages/core/src")

const files = execSync("git ls-files --cached --others --exclude-standard 'packages/*/src/**.ts'", { cwd: root })
  .toString().split("\n").filter(Boolean).map((file) => path.join(root, file)).filter((file) => fs.existsSync(file))

/** The relative module specifiers of a file: imports, re-exports and `import("...")` types. */
const specifiers = (file) => {
  const found = []
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) found.push(node.moduleSpecifier.text)
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) found.push(node.argument.literal.text)
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found.filter((spec) => spec.startsWith("."))
}

const resolve = (from, spec) => {
  const base = path.resolve(path.dirname(from), spec)
  for (const candidate of [base.replace(/\.js$/, ".ts"), base, `${base}.ts`, path.join(base, "index.ts")]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate
  }
  return undefined
}

/** Strongly connected components with more than one member, or a node importing itself (Tarjan). */
const cycles = (graph) => {
  let counter = 0
  const index = new Map(), low = new Map(), stack = [], onStack = new Set(), found = []
  const connect = (node) => {
    index.set(node, counter), low.set(node, counter), counter++
    stack.push(node), onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) connect(next), low.set(node, Math.min(low.get(node), low.get(next)))
      else if (onStack.has(next)) low.set(node, Math.min(low.get(node), index.get(next)))
    }
    if (low.get(node) === index.get(node)) {
      const component = []
      let member
      do member = stack.pop(), onStack.delete(member), component.push(member)
      while (member !== node)
      if (component.length > 1 || (graph.get(node) ?? new Set()).has(node)) found.push(component.sort())
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) connect(node)
  return found
}

/** `agent` for packages/core/src/agent/AgentRegistry.ts; undefined for files at the top of src/. */
const subsystemOf = (file) => {
  const parts = path.relative(core, file).split(path.sep)
  return parts[0] === ".." || parts.length === 1 ? undefined : parts[0]
}

const problems = []
const fileGraph = new Map()
const folderGraph = new Map()
for (const file of files) {
  const targets = new Set()
  for (const spec of specifiers(file)) {
    const target = resolve(file, spec)
    if (target === undefined) continue
    targets.add(target)
    const from = subsystemOf(file), to = subsystemOf(target)
    if (from === undefined || to === undefined || from === to) continue
    if (!folderGraph.has(from)) folderGraph.set(from, new Set())
    folderGraph.get(from).add(to)
  }
  fileGraph.set(file, targets)
}
for (const cycle of cycles(fileGraph)) problems.push(`import cycle between files: ${cycle.map((file) => path.relative(root, file)).join(", ")}`)
for (const cycle of cycles(folderGraph)) problems.push(`import cycle between core subsystems: ${cycle.join(", ")}`)

if (problems.length > 0) {
  console.error(problems.join("\n"))
  process.exit(1)
}
const subsystems = new Set(files.filter((file) => file.startsWith(core)).map(subsystemOf).filter((name) => name !== undefined))
console.log(`imports: ${files.length} files, ${subsystems.size} core subsystems, no cycles`)
