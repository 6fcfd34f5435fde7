// Checks the size rule of packages/*/src (run by `pnpm typecheck`; docs/architecture.md says so): no file over 500
// lines unless its first lines say why (a comment holding "over 500 lines:"), no function over 150 lines.
// Prints each problem and exits with 1 when there is any.
import { execSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const ts = createRequire(path.join(root, "package.json"))("typescript")
const FILE_LINES = 500
const FUNCTION_LINES = 150

const files = execSync("git ls-files --cached --others --exclude-standard 'packages/*/src/**.ts' 'packages/*/src/**.tsx'", { cwd: root })
  .toString().split("\n").filter(Boolean).filter((file) => fs.existsSync(path.join(root, file)))

/** A readable name for a function node: its own, its variable's, its property's, or the call it is passed to. */
const nameOf = (node) => {
  if (node.name) return node.name.getText()
  const parent = node.parent
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText()
  if (ts.isCallExpression(parent)) {
    const owner = parent.parent
    const label = ts.isVariableDeclaration(owner) || ts.isPropertyAssignment(owner) ? `${owner.name.getText()}: ` : ""
    return `${label}${parent.expression.getText().slice(0, 40)}(...)`
  }
  return "(anonymous)"
}

const problems = []
for (const file of files) {
  const text = fs.readFileSync(path.join(root, file), "utf8")
  const lines = text.split("\n").length
  if (lines > FILE_LINES && !/over 500 lines:/i.test(text.split("\n").slice(0, 30).join("\n"))) {
    problems.push(`${file}: ${lines} lines (over ${FILE_LINES}, and its top does not say why: "over 500 lines: <reason>")`)
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart()).line
      const end = source.getLineAndCharacterOfPosition(node.end).line
      if (end - start + 1 > FUNCTION_LINES) {
        problems.push(`${file}:${start + 1}: function ${nameOf(node)} is ${end - start + 1} lines (over ${FUNCTION_LINES})`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}
if (problems.length > 0) {
  console.error(problems.join("\n"))
  process.exit(1)
}
console.log(`check-size: ${files.length} files, none over ${FILE_LINES} lines without a reason, no function over ${FUNCTION_LINES} lines`)
