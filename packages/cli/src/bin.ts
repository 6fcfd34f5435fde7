#!/usr/bin/env node
import { atStartup } from "./startup/EngineFlags.js"
import { VERSION } from "./Version.js"

// Answer --version before loading anything heavy.
if (process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-v")) {
  process.stdout.write(`${VERSION}\n`)
  process.exit(0)
}

// A reader that closed early (`agent session export S | head`) is not an error: stop quietly, as
// Unix tools do, instead of dying with an EPIPE stack trace. EIO is a terminal that has gone (its
// window closed): on a busy machine a write can meet it before the SIGHUP is handled, so it stops the
// program as that SIGHUP does (Main.ts), ending the tools' process groups, instead of crashing past
// them. Any other output error is reported.
let terminalGone = false
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0)
    if (error.code === "EIO") {
      if (!terminalGone) process.kill(process.pid, "SIGHUP")
      terminalGone = true
      return
    }
    throw error
  })
}

// Before any module is evaluated or any wasm compiled (see startup/EngineFlags.ts).
atStartup()

// Not a top-level await: the bundle is CommonJS (see startup/CodeCache.ts).
void import("./Main.js").then(({ main }) => main(process.argv))
