// What `agent run` reads from the user: piped stdin, and answers typed at the terminal.
// Shared by the local run (Run.ts) and `--attach` (Attach.ts); loads nothing of the runtime.
import type { PermissionRequest, QuestionRequest } from "@agent/domain"
import { Effect } from "effect"
import * as readline from "node:readline"

/** How long a pipe or file on stdin may stay silent before `agent run` goes on without it (docs/cli.md, "Piped input"). */
export const STDIN_GRACE_MS = 5_000

/**
 * Piped input: once a first byte arrives, stdin is read to its end however long the producer
 * takes. An open stdin that sends nothing within STDIN_GRACE_MS is given up (with a note on
 * stderr), so a run started from a script with an idle stdin does not hang. `-` waits as long as it takes.
 */
export const readStdin = (wait: boolean): Effect.Effect<string> =>
  Effect.async<string>((resume) => {
    const stdin = process.stdin
    if (stdin.isTTY && !wait) return resume(Effect.succeed(""))
    let text = ""
    let started = false
    const done = () => {
      clearTimeout(timer)
      stdin.removeAllListeners("data")
      stdin.removeAllListeners("end")
      stdin.pause()
      resume(Effect.succeed(text))
    }
    const giveUp = () => {
      if (started) return
      process.stderr.write(
        `agent: nothing arrived on stdin within ${STDIN_GRACE_MS / 1000} s; running without it (pass - to wait for stdin)\n`
      )
      done()
    }
    const timer = wait ? undefined : setTimeout(giveUp, STDIN_GRACE_MS)
    stdin.setEncoding("utf8")
    stdin.on("data", (chunk: string) => {
      started = true
      text += chunk
    })
    stdin.on("end", done)
    stdin.on("error", done)
    stdin.resume()
    return Effect.sync(() => clearTimeout(timer))
  })

export const describeRequest = (request: PermissionRequest) =>
  `${request.permission} ${request.patterns.map((pattern) => JSON.stringify(pattern)).join(", ")}`

/**
 * A line reader on the terminal. Readline takes Ctrl-C for itself; it is passed on as
 * SIGINT so that it still aborts the run (exit 130) while a question is open.
 */
export const openTerminal = () => {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr })
  rl.on("SIGINT", () => {
    rl.close()
    process.kill(process.pid, "SIGINT")
  })
  return rl
}

/** Asks the model's questions on the terminal: an option number (comma-separated when several) or free text. */
export const answerOnTerminal = (request: QuestionRequest) =>
  Effect.async<ReadonlyArray<ReadonlyArray<string>>>((resume) => {
    const rl = openTerminal()
    const answers: Array<Array<string>> = []
    const next = (index: number) => {
      const question = request.questions[index]
      if (!question) {
        rl.close()
        return resume(Effect.succeed(answers))
      }
      const options = question.options.map((option, n) => `  ${n + 1}. ${option.label}${option.description ? ` - ${option.description}` : ""}`)
      rl.question(`${question.question}\n${options.join("\n")}\n> `, (answer) => {
        const picks = answer.split(",").map((part) => Number(part.trim())).filter((n) => Number.isInteger(n) && n >= 1 && n <= question.options.length)
        answers.push(picks.length > 0 ? picks.map((n) => question.options[n - 1]!.label) : [answer.trim()])
        next(index + 1)
      })
    }
    next(0)
    return Effect.sync(() => rl.close())
  })

/** The next prompt typed at the terminal; `undefined` at end of input (Ctrl-D). */
export const readPrompt = Effect.async<string | undefined>((resume) => {
  const rl = openTerminal()
  let done = false
  rl.question("> ", (line) => {
    done = true
    rl.close()
    resume(Effect.succeed(line))
  })
  rl.on("close", () => {
    if (!done) resume(Effect.succeed(undefined))
    done = true
  })
  return Effect.sync(() => rl.close())
})
