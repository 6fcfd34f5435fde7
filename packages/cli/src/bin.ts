#!/usr/bin/env node
import { VERSION } from "./Version.js"

// Answer --version before loading anything heavy.
if (process.argv.length === 3 && (process.argv[2] === "--version" || process.argv[2] === "-v")) {
  process.stdout.write(`${VERSION}\n`)
  process.exit(0)
}

const { main } = await import("./Main.js")
main(process.argv)
