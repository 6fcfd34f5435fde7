#!/usr/bin/env node
import { atStartup } from "./EngineFlags.js"
import { VERSION } from "./Version.js"

// Answer --version before loading anything heavy.
if (process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-v")) {
  process.stdout.write(`${VERSION}\n`)
  process.exit(0)
}

// Before any module is evaluated or any wasm compiled (see EngineFlags.ts).
atStartup()

// Not a top-level await: the bundle is CommonJS (see CompileCache.ts).
void import("./Main.js").then(({ main }) => main(process.argv))
