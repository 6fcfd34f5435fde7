import {
  attachmentMime,
  Bus,
  CommandRegistry,
  Instance,
  makeAppLayer,
  PermissionService,
  QuestionService,
  type PromptPartInput,
  type RunOutcome,
  SessionLoop,
  SessionStore,
  type StopReason
} from "@agent/core"
import {
  type BusEvent,
  parseModelRef,
  type Part,
  type PermissionRequest,
  type QuestionRequest,
  type SessionID
} from "@agent/domain"
import { Console, Effect, Option, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { ExitCode, UsageError } from "./ExitCode.js"
import type { RunInput } from "./RunCommand.js"

/** Exit code for each way a run can end. */
const exitCodeOf = (reason: StopReason): number => {
  switch (reason) {
    case "completed":
      return ExitCode.ok
    case "rejected":
      return ExitCode.permission
    case "steps":
    case "duration":
    case "stall":
    case "budget":
      return ExitCode.limit
    case "aborted":
      return ExitCode.interrupted
    case "error":
      return ExitCode.runtime
  }
}


/** `-f` files: images and PDFs as attachments, anything else inlined as text. */
const fileParts = (files: ReadonlyArray<string>, directory: string) =>
  Effect.forEach(files, (file) =>
    Effect.gen(function*() {
      const absolute = path.resolve(directory, file)
      const stat = yield* Effect.try(() => fs.statSync(absolute)).pipe(
        Effect.mapError(() => new UsageError({ message: `file not found: ${file}` }))
      )
      if (!stat.isFile()) return yield* new UsageError({ message: `not a file: ${file}` })
      if (stat.size > 10 * 1024 * 1024) return yield* new UsageError({ message: `file too large (over 10 MB): ${file}` })
      const mime = attachmentMime(absolute)
      if (mime) {
        const data = fs.readFileSync(absolute).toString("base64")
        return { type: "file", mime, url: `data:${mime};base64,${data}`, filename: path.basename(absolute) } satisfies PromptPartInput
      }
      const content = fs.readFileSync(absolute, "utf8")
      return { type: "text", text: `<file path="${absolute}">\n${content}\n</file>`, synthetic: true } satisfies PromptPartInput
    }))

/**
 * Piped input, read only when there is some: a pipe that delivers nothing within a moment
 * (an open, empty stdin) is left alone, so the run never hangs waiting for it. `-` waits.
 */
const readStdin = (wait: boolean): Effect.Effect<string> =>
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
    const timer = wait ? undefined : setTimeout(() => (started ? undefined : done()), 50)
    stdin.setEncoding("utf8")
    stdin.on("data", (chunk: string) => {
      started = true
      text += chunk
    })
    stdin.on("end", done)
    stdin.on("error", done)
    stdin.resume()
  })

/** OpenCode's `run --format json` event shapes, one object per line. */
const jsonEvent = (sessionID: SessionID, event: BusEvent): object | undefined => {
  const base = { timestamp: Date.now(), sessionID }
  if (event.type === "session.error" && event.properties.sessionID === sessionID) {
    return { type: "error", ...base, error: event.properties.error }
  }
  if (event.type !== "message.part.updated") return undefined
  const part: Part = event.properties.part
  if (part.sessionID !== sessionID) return undefined
  switch (part.type) {
    case "step-start":
      return { type: "step_start", ...base, part }
    case "step-finish":
      return { type: "step_finish", ...base, part }
    case "text":
      return part.time?.end !== undefined && !part.synthetic ? { type: "text", ...base, part } : undefined
    case "reasoning":
      return part.time?.end !== undefined ? { type: "reasoning", ...base, part } : undefined
    case "tool":
      return part.state.status === "completed" || part.state.status === "error" ? { type: "tool_use", ...base, part } : undefined
    default:
      return undefined
  }
}

/** A line for a terminal watching the run: which tool ran, with its title. */
const progressLine = (sessionID: SessionID, event: BusEvent): string | undefined => {
  if (event.type !== "message.part.updated") return undefined
  const part = event.properties.part
  if (part.sessionID !== sessionID || part.type !== "tool") return undefined
  if (part.state.status === "completed") return `  ${part.tool.padEnd(10)} ${part.state.title}`
  if (part.state.status === "error") return `  ${part.tool.padEnd(10)} failed: ${part.state.error.split("\n")[0]}`
  return undefined
}

const describeRequest = (request: PermissionRequest) =>
  `${request.permission} ${request.patterns.map((pattern) => JSON.stringify(pattern)).join(", ")}`

/**
 * A line reader on the terminal. Readline takes Ctrl-C for itself; it is passed on as
 * SIGINT so that it still aborts the run (exit 130) while a question is open.
 */
const openTerminal = () => {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr })
  rl.on("SIGINT", () => {
    rl.close()
    process.kill(process.pid, "SIGINT")
  })
  return rl
}

type PermissionAnswer = { readonly reply: "once" | "always" | "reject"; readonly message?: string }

const parsePermissionAnswer = (answer: string): PermissionAnswer["reply"] | "message" | undefined => {
  const choice = answer.trim().toLowerCase()
  if (choice === "o" || choice === "once" || choice === "y" || choice === "yes") return "once"
  if (choice === "a" || choice === "always") return "always"
  if (choice === "r" || choice === "reject" || choice === "n" || choice === "no") return "reject"
  if (choice === "m" || choice === "message") return "message"
  return undefined
}

/** Asks the user on the terminal: once, always, reject, or reject with a message for the agent. */
const askOnTerminal = (request: PermissionRequest) =>
  Effect.async<PermissionAnswer>((resume) => {
    const rl = openTerminal()
    const diff = typeof request.metadata.diff === "string" ? `${request.metadata.diff}\n` : ""
    const ask = (prefix: string) =>
      rl.question(`${prefix}Allow ${describeRequest(request)}? [o]nce, [a]lways, [r]eject, [m]essage: `, (answer) => {
        const choice = parsePermissionAnswer(answer)
        if (choice === undefined) return ask("Please answer o, a, r or m. ")
        if (choice === "message") {
          return rl.question("Tell the agent what to do instead: ", (text) => {
            rl.close()
            resume(Effect.succeed({ reply: "reject", message: text }))
          })
        }
        rl.close()
        resume(Effect.succeed({ reply: choice }))
      })
    ask(diff)
    return Effect.sync(() => rl.close())
  })

/** Asks the model's questions on the terminal: an option number (comma-separated when several) or free text. */
const answerOnTerminal = (request: QuestionRequest) =>
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
const readPrompt = Effect.async<string | undefined>((resume) => {
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

const EXIT_COMMANDS = new Set(["/exit", "/quit"])

const checkDirectory = (dir: string) =>
  Effect.gen(function*() {
    const absolute = path.resolve(dir)
    const stat = yield* Effect.try(() => fs.statSync(absolute)).pipe(
      Effect.mapError(() => new UsageError({ message: `--dir: no such directory: ${dir}` }))
    )
    if (!stat.isDirectory()) return yield* new UsageError({ message: `--dir: not a directory: ${dir}` })
    return absolute
  })

export const run = (input: RunInput) =>
  Effect.gen(function*() {
    const directory = Option.isSome(input.dir) ? yield* checkDirectory(input.dir.value) : undefined
    const terminal = process.stdin.isTTY === true && process.stderr.isTTY === true
    if (input.interactive && !terminal) {
      return yield* new UsageError({ message: "--interactive needs a terminal on stdin and stderr" })
    }
    // The whole runtime, in `--dir` when given.
    return yield* session(input, terminal).pipe(
      Effect.provide(makeAppLayer(directory === undefined ? {} : { instance: Instance.layerWith({ directory }) }))
    )
  })

const session = (input: RunInput, terminal: boolean) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const loop = yield* SessionLoop
    const bus = yield* Bus
    const permissions = yield* PermissionService
    const questions = yield* QuestionService
    const instance = yield* Instance
    const json = input.format === "json"

    const wantsStdin = input.message.includes("-")
    const piped = yield* readStdin(wantsStdin)
    const words = input.message.filter((word) => word !== "-")
    const text = [words.join(" "), piped.trim()].filter((chunk) => chunk.length > 0).join("\n\n")
    const files = yield* fileParts(input.file, instance.directory)
    if (!text && files.length === 0 && !input.interactive && Option.isNone(input.command)) {
      return yield* new UsageError({ message: "nothing to do: give a message, pipe one in, or attach a file" })
    }
    if (input.fork && !input.continue && Option.isNone(input.session)) {
      return yield* new UsageError({ message: "--fork needs --continue or --session" })
    }
    const model = Option.isSome(input.model) ? parseModelRef(input.model.value) : undefined
    if (Option.isSome(input.model) && !model) return yield* new UsageError({ message: `--model must be provider/model, got "${input.model.value}"` })

    let sessionID: SessionID
    if (Option.isSome(input.session)) {
      const found = yield* store.get(input.session.value as SessionID).pipe(
        Effect.mapError(() => new UsageError({ message: `session not found: ${input.session.pipe(Option.getOrElse(() => ""))}` }))
      )
      sessionID = found.id
    } else if (input.continue) {
      const [latest] = (yield* store.list({ limit: 1 })).items
      if (!latest) return yield* new UsageError({ message: "no session to continue in this project" })
      sessionID = latest.id
    } else {
      const title = Option.getOrUndefined(input.title)
      sessionID = (yield* store.create(title !== undefined ? { title: title || text.slice(0, 50) } : {})).id
    }
    if (input.fork) sessionID = (yield* store.fork(sessionID)).id

    // Every event of the run, from before the prompt, so nothing is missed.
    const events = yield* bus.subscribe()
    yield* events.pipe(
      Stream.runForEach((event) =>
        Effect.gen(function*() {
          if (json) {
            const line = jsonEvent(sessionID, event)
            if (line) yield* Console.log(JSON.stringify(line))
          } else if (terminal) {
            const line = progressLine(sessionID, event)
            if (line) yield* Console.error(line)
          }
          if (event.type === "question.asked" && terminal) {
            const answers = yield* answerOnTerminal(event.properties)
            yield* questions.reply(event.properties.id, answers).pipe(Effect.ignore)
          }
          if (event.type === "permission.asked" && !input.autoApprove) {
            const request = event.properties
            if (terminal) {
              const answer = yield* askOnTerminal(request)
              yield* permissions.reply({ requestID: request.id, ...answer }).pipe(Effect.ignore)
            } else {
              // No one can answer: reject, and say so where a script's author will look.
              yield* Console.error(`agent: permission asked for ${describeRequest(request)}; rejected (no terminal to ask; pass --auto-approve to allow)`)
              yield* permissions.reply({ requestID: request.id, reply: "reject" }).pipe(Effect.ignore)
            }
          }
        })
      ),
      Effect.catchAllCause((cause) => Effect.logError("event printer stopped", cause)),
      Effect.forkScoped
    )

    const printResult = (outcome: RunOutcome, code: number) =>
      Effect.gen(function*() {
        const answer = (outcome.message?.parts ?? [])
          .flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : []))
          .join("\n")
          .trim()
        if (json) {
          const session = yield* store.get(sessionID).pipe(Effect.option)
          yield* Console.log(JSON.stringify({
            type: "result",
            timestamp: Date.now(),
            sessionID,
            status: outcome.reason,
            exitCode: code,
            reason: outcome.error?.data.message ?? outcome.reason,
            text: answer,
            steps: outcome.usage.steps,
            tokens: Option.match(session, { onNone: () => undefined, onSome: (info) => info.tokens }),
            cost: Option.match(session, { onNone: () => outcome.usage.cost, onSome: (info) => info.cost ?? 0 })
          }))
        } else {
          if (answer) yield* Console.log(answer)
          if (outcome.reason !== "completed") {
            yield* Console.error(`agent: run ${outcome.reason}${outcome.error ? `: ${outcome.error.data.message}` : ""}`)
          }
        }
      })

    /** One prompt, run to its end; the exit code it earns. */
    const commands = yield* CommandRegistry
    /** One prompt (or, first, the `--command` with the message as its arguments), run to its end. */
    const turn = (parts: ReadonlyArray<PromptPartInput>, command?: { readonly name: string; readonly arguments: string }) =>
      Effect.gen(function*() {
        const common = {
          sessionID,
          ...(Option.isSome(input.agent) ? { agent: input.agent.value } : {}),
          ...(model ? { model } : {}),
          autoApprove: input.autoApprove,
          // Nobody can answer the model's questions without a terminal.
          ...(terminal ? {} : { tools: { question: false } }),
          ...(Option.isSome(input.maxSteps) ? { maxSteps: input.maxSteps.value } : {})
        }
        const outcome = yield* (command
          ? commands.execute({ ...common, command: command.name, arguments: command.arguments, parts }).pipe(
            Effect.catchTags({
              CommandNotFound: (error) => new UsageError({ message: error.message }),
              CommandError: (error) => new UsageError({ message: error.message })
            })
          )
          : loop.prompt({ ...common, parts })
        ).pipe(
          // Ctrl-C: stop the run cleanly (tools killed, parts marked), report, exit 130.
          Effect.onInterrupt(() =>
            loop.abort(sessionID).pipe(
              Effect.zipRight(printResult({ reason: "aborted", usage: { cost: 0, tokens: 0, steps: 0 } }, ExitCode.interrupted))
            )
          )
        )
        const code = exitCodeOf(outcome.reason)
        yield* printResult(outcome, code)
        return code
      })

    let code: number = ExitCode.ok
    if (Option.isSome(input.command)) code = yield* turn(files, { name: input.command.value, arguments: text })
    else if (text || files.length > 0) code = yield* turn([...(text ? [{ type: "text" as const, text }] : []), ...files])
    if (!input.interactive) return code
    // The conversation goes on in the same session until /exit or the end of input.
    for (;;) {
      const line = yield* readPrompt
      if (line === undefined || EXIT_COMMANDS.has(line.trim())) return code
      if (line.trim()) code = yield* turn([{ type: "text", text: line.trim() }])
    }
  }).pipe(Effect.scoped)
