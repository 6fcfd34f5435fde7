// Builds the page `agent serve` serves (docs/web.md) into dist/: index.html, assets/app.js and
// assets/app.css, each beside its brotli (.br) and gzip (.gz) form, so the server sends them
// compressed without compressing at run time. Run by the root `build` script after `tsc -b`.
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as zlib from "node:zlib"

const here = path.dirname(fileURLToPath(import.meta.url))
const dist = path.join(here, "dist")
const assets = path.join(dist, "assets")
fs.rmSync(dist, { recursive: true, force: true })
fs.mkdirSync(assets, { recursive: true })

await esbuild.build({
  entryPoints: { app: path.join(here, "src", "main.tsx") },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome111", "firefox115", "safari16.4"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: assets,
  legalComments: "linked",
  logLevel: "warning",
  define: { "process.env.NODE_ENV": '"production"' }
})
await esbuild.build({
  entryPoints: { app: path.join(here, "src", "style.css") },
  bundle: true,
  minify: true,
  outdir: assets,
  logLevel: "warning"
})
fs.copyFileSync(path.join(here, "src", "index.html"), path.join(dist, "index.html"))
fs.copyFileSync(path.join(here, "src", "icon.svg"), path.join(assets, "icon.svg"))

const compress = (file) => {
  const body = fs.readFileSync(file)
  fs.writeFileSync(`${file}.br`, zlib.brotliCompressSync(body, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length }
  }))
  fs.writeFileSync(`${file}.gz`, zlib.gzipSync(body, { level: 9 }))
}
const sizes = {}
for (const file of [path.join(dist, "index.html"), ...fs.readdirSync(assets).map((name) => path.join(assets, name))]) {
  if (/\.(br|gz|txt)$/.test(file)) continue
  compress(file)
  sizes[path.relative(dist, file)] = { raw: fs.statSync(file).size, br: fs.statSync(`${file}.br`).size, gzip: fs.statSync(`${file}.gz`).size }
}
fs.writeFileSync(path.join(dist, "sizes.json"), JSON.stringify(sizes, null, 2) + "\n")
