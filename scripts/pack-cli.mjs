// `pnpm pack:cli`: the `agent` command as an npm tarball that installs on its own
// (`npm install -g dist/agent-cli-<version>.tgz`). Run after `tsc -b` (the root script does).
//
// packages/cli itself cannot be packed: its dependencies are workspace packages, and its bundle
// reaches into the checkout (prompts/, node_modules/.pnpm). The staged package holds:
// - bundle/: the CLI bundled by `bundle.mjs --packed`, which expects prompts/ and node_modules/
//   at the package root;
// - prompts/: the prompt texts;
// - packages/web/dist/: the web page of `agent serve` (built by the root `build`);
// - node_modules/web-tree-sitter, node_modules/tree-sitter-bash (bundled): only the two wasm
//   files the bash parser loads at run time (their JavaScript is in the bundle; tree-sitter-bash
//   would otherwise build a native addon nobody uses);
// - dependencies installed by npm: better-sqlite3 (a native addon: a prebuilt binary, or built
//   from source with python3, make and a C++ compiler) and esbuild (transpiles TypeScript custom
//   tools, as in the checkout).
//
// Usage: node scripts/pack-cli.mjs [--out <dir>]   (default: dist/ at the checkout root)
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const cli = path.join(root, "packages", "cli")
const fromCore = createRequire(path.join(root, "packages", "core", "package.json"))

const parseOut = (args) => {
  if (args.length === 0) return path.join(root, "dist")
  if (args.length === 2 && args[0] === "--out") return path.resolve(args[1])
  console.error("usage: node scripts/pack-cli.mjs [--out <dir>]")
  process.exit(2)
}
const out = parseOut(process.argv.slice(2))
if (!fs.existsSync(path.join(cli, "dist", "bin.js"))) {
  console.error("pack-cli: packages/cli/dist/bin.js is missing; run `pnpm build` first (or `pnpm pack:cli`, which builds)")
  process.exit(2)
}

const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"))
const writeJson = (file, value) => fs.writeFileSync(file, JSON.stringify(value, null, 2) + "\n")
/** The directory and manifest of the installed package `name`, found from one of its files. */
const installed = (name, file, from = fromCore) => {
  for (let dir = path.dirname(from.resolve(file)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const manifest = path.join(dir, "package.json")
    if (fs.existsSync(manifest) && readJson(manifest).name === name) return { dir, manifest: readJson(manifest) }
  }
  throw new Error(`pack-cli: no package.json of ${name} above ${file}`)
}

const stage = path.join(out, "cli-package")
fs.rmSync(stage, { recursive: true, force: true })
fs.mkdirSync(stage, { recursive: true })

execFileSync(process.execPath, [path.join(cli, "bundle.mjs"), "--packed", stage], { stdio: "inherit" })
fs.cpSync(path.join(root, "prompts"), path.join(stage, "prompts"), { recursive: true })
// The web page `agent serve` serves, where the bundled server looks for it (its checkout position).
fs.cpSync(path.join(root, "packages", "web", "dist"), path.join(stage, "packages", "web", "dist"), { recursive: true })

/** A bundled dependency holding only the named files of the installed package. */
const bundleFiles = (name, anchor, files) => {
  const { dir: from, manifest } = installed(name, `${name}/${anchor}`)
  const to = path.join(stage, "node_modules", name)
  fs.mkdirSync(to, { recursive: true })
  for (const file of [...files, "LICENSE"]) {
    if (fs.existsSync(path.join(from, file))) fs.copyFileSync(path.join(from, file), path.join(to, file))
  }
  writeJson(path.join(to, "package.json"), {
    name,
    version: manifest.version,
    description: `${files.join(", ")} of ${name} ${manifest.version}, loaded by the agent CLI at run time`,
    license: manifest.license
  })
  return manifest.version
}
const treeSitter = bundleFiles("web-tree-sitter", "tree-sitter.wasm", ["tree-sitter.wasm"])
const bash = bundleFiles("tree-sitter-bash", "tree-sitter-bash.wasm", ["tree-sitter-bash.wasm"])

const manifest = readJson(path.join(cli, "package.json"))
const sqliteClient = createRequire(fromCore.resolve("@effect/sql-sqlite-node"))
writeJson(path.join(stage, "package.json"), {
  name: manifest.name,
  version: manifest.version,
  description: "The agent command: an AI coding agent for the terminal",
  engines: manifest.engines,
  bin: { agent: "bundle/bin.js" },
  files: ["bundle", "prompts", "packages/web/dist"],
  dependencies: {
    // The versions the checkout runs (and tests) with.
    "better-sqlite3": `^${installed("better-sqlite3", "better-sqlite3", sqliteClient).manifest.version}`,
    esbuild: installed("esbuild", "esbuild").manifest.version,
    "tree-sitter-bash": bash,
    "web-tree-sitter": treeSitter
  },
  bundleDependencies: ["tree-sitter-bash", "web-tree-sitter"]
})

const packed = execFileSync("npm", ["pack", "--silent", "--pack-destination", out], { cwd: stage, encoding: "utf8" })
  .trim().split("\n").pop()
console.log(path.join(out, packed))
