// The one-time question an interactive `agent run` asks when the project brings hooks it has not
// trusted yet (docs/hooks.md, "Trust"): the commands are shown, and the answer is stored as
// `agent trust` (or `agent trust --revoke`) stores it. Without a terminal nothing is asked and the
// hooks stay held, with the runtime's usual warning.
import { loadConfig, ConfigService } from "@agent/core/config/ConfigService"
import { listed, loadHooks } from "@agent/core/hooks/Hooks"
import { setTrust } from "@agent/core/hooks/ProjectTrust"
import { Instance } from "@agent/core/runtime/Instance"
import { Effect, type Layer } from "effect"
import * as readline from "node:readline"
import { heldForTrust, parseTrustAnswer, trustQuestion } from "./TrustQuestion.js"

/** Whether a person can be asked: a terminal on stdin and stdout. */
export const interactive = () => process.stdin.isTTY === true && process.stdout.isTTY === true

/** One line from the terminal, the question shown where the person looks (stderr, or stdout when stderr is not a terminal). */
const readAnswer = (question: string) =>
  Effect.async<string | undefined>((resume) => {
    const output = process.stderr.isTTY === true ? process.stderr : process.stdout
    const rl = readline.createInterface({ input: process.stdin, output })
    let answered = false
    rl.on("SIGINT", () => {
      rl.close()
      process.kill(process.pid, "SIGINT")
    })
    rl.on("close", () => {
      if (!answered) resume(Effect.succeed(undefined))
      answered = true
    })
    rl.question(question, (line) => {
      answered = true
      rl.close()
      resume(Effect.succeed(line))
    })
    return Effect.sync(() => rl.close())
  })

/**
 * Before the runtime is built (its hooks are decided then): when the project of `instance` brings
 * hooks held for want of trust and a person is at the terminal, asks once and stores the answer.
 * A configuration that does not load is left for the runtime to report.
 */
export const offerTrust = (instance: Layer.Layer<Instance>) =>
  Effect.gen(function*() {
    if (!interactive()) return
    const info = yield* Instance
    const config = yield* loadConfig(info).pipe(Effect.option)
    if (config._tag === "None") return
    const loaded = yield* loadHooks.pipe(Effect.provide(ConfigService.layerFromInfo(config.value)))
    const held = heldForTrust(listed(loaded), loaded.trusted, loaded.disabled)
    if (held.length === 0) return
    const yes = parseTrustAnswer(yield* readAnswer(trustQuestion(info.worktree, held)))
    setTrust(info.paths.data, info.worktree, yes)
    const output = process.stderr.isTTY === true ? process.stderr : process.stdout
    output.write(
      yes
        ? `${info.worktree} is trusted: its hooks run.\n`
        : `${info.worktree} is not trusted: its hooks do not run (asked again next time; \`agent trust\` trusts it).\n`
    )
  }).pipe(Effect.provide(instance))
