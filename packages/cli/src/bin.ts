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

const { main } = await import("./Main.js")
main(process.argv)
