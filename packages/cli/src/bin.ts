#!/usr/bin/env node
import { setFlagsFromString } from "node:v8"
import { VERSION } from "./Version.js"

// Answer --version before loading anything heavy.
if (process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-v")) {
  process.stdout.write(`${VERSION}\n`)
  process.exit(0)
}

// WebAssembly stays on V8's baseline compiler (Liftoff). The process runs two wasm modules, the
// bash grammar (tree-sitter) and fetch's HTTP parser, and both are hot enough after one command or
// one response to be recompiled by the optimizing compiler: the lexer of the bash grammar is one
// 160 KB function, whose recompilation took ~0.8 s of CPU on a background thread and up to 40 MB of
// memory (two compilations at once) - a third of the peak memory of a short run - to speed up
// parses that already take under a millisecond. Set before any wasm module is compiled (the
// flags are read at compile time). Without `--liftoff-only`, a function Liftoff cannot compile
// still goes to the optimizing compiler instead of failing.
setFlagsFromString("--no-wasm-dynamic-tiering")
setFlagsFromString("--no-wasm-tier-up")

const { main } = await import("./Main.js")
main(process.argv)
