import { Effect } from "effect"
import { parseCommand } from "/work/main/packages/core/src/tools/BashParse.ts"
for (const c of process.argv.slice(2)) {
  const p = await Effect.runPromise(parseCommand(c))
  console.log(JSON.stringify(c), "\n  patterns:", JSON.stringify(p.patterns), "\n  opaque:", JSON.stringify(p.opaque.map(o=>o.reason)))
}
