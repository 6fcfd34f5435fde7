#!/usr/bin/env node
import { makeAppLayer } from "@agent/core"
import { ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Layer } from "effect"
import { run } from "./Cli.js"

/** Exit codes a script can rely on (documented in the README). */
export const ExitCode = { ok: 0, runtime: 1, usage: 2 } as const

/** Errors caused by what the user typed or configured, as opposed to failures while running. */
const USAGE_ERRORS = new Set(["ConfigError", "DefaultAgentError", "AgentNotFound"])

const app = makeAppLayer()

run(process.argv).pipe(
  Effect.provide(Layer.merge(app, NodeContext.layer)),
  Effect.as(ExitCode.ok),
  Effect.catchAll((error) => {
    // @effect/cli has already printed the problem and the help text.
    if (ValidationError.isValidationError(error)) return Effect.succeed(ExitCode.usage)
    const code = USAGE_ERRORS.has(error._tag) ? ExitCode.usage : ExitCode.runtime
    return Console.error(`agent: ${error.message}`).pipe(Effect.as(code))
  }),
  Effect.flatMap((code) => Effect.sync(() => void (process.exitCode = code))),
  NodeRuntime.runMain
)
