// Bundles the built CLI (dist/) into dist/bundle/: one small entry, one chunk for the command
// line and one per group of commands, so `agent --help` reads a few files instead of
// thousands of modules. Run after `tsc -b` (the root `build` script does).
//
// The bundle is CommonJS (esbuild splits only ES modules, so each file is turned into CommonJS
// after the split): Node 20 can only give V8's code cache to scripts it compiles through `vm`,
// and the bin installs that cache before it loads the CLI (src/startup/CodeCache.ts).
//
// Two things keep the bundle behaving like the unbundled code:
// - `import.meta.url` in workspace modules is replaced by the URL of the module it was written
//   in (relative to the bundle, so the checkout can move): prompts/ and the tree-sitter wasm
//   files are found from there, as before.
// - native and runtime-resolved packages stay external and are imported by relative path to
//   their installed files.
//
// `node bundle.mjs --packed <dir>` writes the bundle of a package that stands on its own instead
// (scripts/pack-cli.mjs stages it and runs `npm pack`): <dir>/bundle/, with module URLs naming the
// files' checkout positions below <dir> (so prompts/ is found at <dir>/prompts/, and packages are
// resolved from <dir>/node_modules/), and better-sqlite3 imported by name, as a dependency.
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const workspace = path.resolve(here, "..")
const packedAt = process.argv[2] === "--packed" ? path.resolve(process.argv[3] ?? "") : undefined
if (packedAt !== undefined && process.argv[3] === undefined) throw new Error("usage: node bundle.mjs [--packed <dir>]")
const outdir = packedAt === undefined ? path.join(here, "dist", "bundle") : path.join(packedAt, "bundle")
/** Where module URLs are relative to: the bundle itself, or, packed, a `bundle/` at the checkout root. */
const urlBase = packedAt === undefined ? outdir : path.join(workspace, "..", "bundle")

/** Packages that cannot be bundled: native addons. */
const EXTERNAL = ["better-sqlite3"]

const relativeTo = (base, file) => {
  const relative = path.relative(base, file).split(path.sep).join("/")
  return relative.startsWith(".") ? relative : `./${relative}`
}

const keepModuleUrls = {
  name: "keep-module-urls",
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, (args) => {
      if (!args.path.startsWith(workspace + path.sep) || args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined
      const source = fs.readFileSync(args.path, "utf8")
      if (!source.includes("import.meta.url")) return undefined
      const url = `new URL(${JSON.stringify(relativeTo(urlBase, args.path))}, import.meta.url).href`
      return { contents: source.replaceAll("import.meta.url", url), loader: "js", resolveDir: path.dirname(args.path) }
    })
  }
}

const externalByPath = {
  name: "external-by-path",
  setup(build) {
    const filter = new RegExp(`^(${EXTERNAL.join("|")})$`)
    build.onResolve({ filter }, (args) => {
      if (packedAt !== undefined) return { path: args.path, external: true }
      const resolved = createRequire(path.join(args.resolveDir, "index.js")).resolve(args.path)
      return { path: relativeTo(outdir, resolved), external: true }
    })
  }
}

fs.rmSync(outdir, { recursive: true, force: true })
const result = await esbuild.build({
  entryPoints: { cli: path.join(here, "dist", "bin.js") },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  // ESM builds where packages have them (jsonc-parser's "main" is a UMD build esbuild cannot follow).
  mainFields: ["module", "main"],
  target: "node20",
  plugins: [keepModuleUrls, externalByPath],
  // Every output file in one directory, so relative paths mean the same in each of them.
  chunkNames: "[name]-[hash]",
  metafile: true,
  logLevel: "warning",
  legalComments: "none"
})
if (packedAt === undefined) fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile))

// Each file to CommonJS. A chunk's `import("./chunk.js")` becomes a `require` (through Node's
// ES module loader a CommonJS file is also scanned for its export names). Other dynamic imports
// (user tool files, Node built-ins) go through a function the bin's startup file defines: in
// Node 20, `import()` in code compiled from V8's code cache fails once the script has been
// collected ("A dynamic import callback was not specified"). `import.meta.url` is the file's URL.
const chunkImport = /\bimport\("(\.\/[\w.-]+\.js)"\)/g
const otherImport = /(^|[^\w$.])import\(/gm
for (const file of fs.readdirSync(outdir).filter((name) => name.endsWith(".js"))) {
  const full = path.join(outdir, file)
  const source = fs.readFileSync(full, "utf8").replace(/^#!.*\n/, "")
    .replace(chunkImport, (_, chunk) => `Promise.resolve().then(() => require(${JSON.stringify(chunk)}))`)
  const converted = esbuild.transformSync(source, {
    loader: "js",
    format: "cjs",
    platform: "node",
    target: "node20",
    define: { "import.meta.url": "__moduleUrl" },
    banner: 'const __moduleUrl = require("node:url").pathToFileURL(__filename).href, __import = (specifier) => globalThis[Symbol.for("@agent/cli/import")](specifier);',
    legalComments: "none"
  })
  fs.writeFileSync(full, converted.code.replace(otherImport, "$1__import("))
}
fs.writeFileSync(path.join(outdir, "package.json"), JSON.stringify({ type: "commonjs" }))

// The bin: V8 flags and the code cache (one small file of its own), then the CLI.
await esbuild.build({
  entryPoints: { startup: path.join(here, "dist", "startup", "Bundle.js") },
  outdir,
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  logLevel: "warning",
  legalComments: "none"
})
fs.writeFileSync(
  path.join(outdir, "bin.js"),
  '#!/usr/bin/env node\n"use strict";\nrequire("./startup.js").start(__dirname);\nrequire("./cli.js");\n'
)
fs.chmodSync(path.join(outdir, "bin.js"), 0o755)

// V8 keeps the source of every module in memory, at one byte per character only when every
// character is Latin-1: a single dash in a comment of zod made its 880 KB chunk take 1.7 MB for
// the life of the process. Characters past Latin-1 are written as `\uXXXX` where that cannot
// change the program, in comments. A file is rewritten only if esbuild prints the same program for
// both with its whitespace minified (which drops comments, and keeps regular expressions and raw
// template text as written).
const outsideLatin1 = /[^\x00-\xff]/g
for (const file of fs.readdirSync(outdir).filter((name) => name.endsWith(".js"))) {
  const full = path.join(outdir, file)
  const source = fs.readFileSync(full, "utf8")
  if (!outsideLatin1.test(source)) continue
  const escaped = source.replace(outsideLatin1, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`)
  const program = (text) => esbuild.transformSync(text, { loader: "js", format: "cjs", target: "node20", charset: "ascii", minifyWhitespace: true }).code
  if (program(escaped) === program(source)) fs.writeFileSync(full, escaped)
  else console.warn(`bundle: ${file} keeps characters past Latin-1 outside comments; V8 stores its source at two bytes per character`)
}
