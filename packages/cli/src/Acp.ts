// Loaded only when `agent acp` runs (see AcpCommand.ts and Lazy.ts).
import { serveAcp } from "@agent/acp/AcpAgent"
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Readable } from "node:stream"
import type { AcpInput } from "./AcpCommand.js"
import { batchedOutput } from "./BatchedOutput.js"
import { shutdown, UsageError } from "./ExitCode.js"

export const acp = (input: AcpInput) =>
  Effect.gen(function*() {
    const directory = path.resolve(Option.getOrElse(input.dir, () => process.cwd()))
    if (!fs.statSync(directory, { throwIfNoEntry: false })?.isDirectory()) {
      return yield* new UsageError({ message: `--dir: not a directory: ${Option.getOrElse(input.dir, () => directory)}` })
    }
    // SIGTERM or the editor closing stdin ends the process cleanly: runs aborted and stored, exit 0.
    shutdown.graceful = true
    const output = batchedOutput(process.stdout.fd)
    // The last answers (a turn cancelled as the editor left) go out before the process exits,
    // unless the editor stopped reading: then not for longer than a few seconds.
    yield* Effect.addFinalizer(() => Effect.promise(output.flushed).pipe(Effect.timeout("5 seconds"), Effect.ignore))
    yield* serveAcp({
      input: Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
      output: output.stream,
      directory,
      env: process.env,
      ...(Option.isSome(input.agent) ? { agent: input.agent.value } : {}),
      ...(Option.isSome(input.model) ? { model: input.model.value } : {})
    })
  }).pipe(Effect.scoped)
