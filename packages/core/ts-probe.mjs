import { Language, Parser } from "web-tree-sitter"
import { createRequire } from "node:module"
const require = createRequire(import.meta.url)
await Parser.init({ locateFile: () => require.resolve("web-tree-sitter/tree-sitter.wasm") })
const lang = await Language.load(require.resolve("tree-sitter-bash/tree-sitter-bash.wasm"))
const p = new Parser(); p.setLanguage(lang)
const show = (n, d=0) => { console.log("  ".repeat(d) + n.type + (n.childCount===0||n.type.includes("string")||n.type==="word" ? " " + JSON.stringify(n.text) : "") + (n.isNamed?"":" (anon)")); for (const c of n.children) show(c, d+1) }
for (const s of process.argv.slice(2)) { console.log("=== " + JSON.stringify(s)); show(p.parse(s).rootNode) }
