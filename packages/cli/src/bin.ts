#!/usr/bin/env node
import { atStartup } from "./startup/EngineFlags.js"
import { VERSION } from "./Version.js"

// Answer --version before loading anything heavy.
if (process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-v")) {
  process.stdout.write(`${VERSION}\n`)
  process.exit(0)
}

// A reader that closed early (`agent session export S | head`) is not an error: stop quietly, as
// Unix tools do, instead of dying with an EPIPE stack trace. Any other output error is reported.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0)
    throw error
  })
}

// Before any module is evaluated or any wasm compiled (see startup/EngineFlags.ts).
atStartup()

// Not a top-level await: the bundle is CommonJS (see startup/CodeCache.ts).
void import("./Main.js").then(({ main }) => main(process.argv))
