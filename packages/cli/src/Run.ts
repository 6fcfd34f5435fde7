import {
  Bus,
  CommandRegistry,
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
import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Option, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { ExitCode, UsageError } from "./ExitCode.js"

const message = Args.text({ name: "message" }).pipe(Args.repeated)

const options = {
  agent: Options.text("agent").pipe(Options.withDescription("agent to run (default: the default agent)"), Options.optional),
  model: Options.text("model").pipe(Options.withAlias("m"), Options.withDescription("provider/model"), Options.optional),
  continue: Options.boolean("continue").pipe(Options.withAlias("c"), Options.withDescription("continue the most recent session")),
  session: Options.text("session").pipe(Options.withAlias("s"), Options.withDescription("session id to continue"), Options.optional),
  fork: Options.boolean("fork").pipe(Options.withDescription("fork the session given by -c or -s and continue the copy")),
  title: Options.text("title").pipe(Options.withDescription("title of a new session"), Options.optional),
  file: Options.text("file").pipe(Options.withAlias("f"), Options.withDescription("attach a file (repeatable)"), Options.repeated),
  format: Options.choice("format", ["default", "json"]).pipe(
    Options.withDescription("default: the answer as text; json: one event per line, ending with a result event"),
    Options.withDefault("default" as const)
  ),
  autoApprove: Options.boolean("auto-approve").pipe(
    Options.withDescription("answer permission asks with \"once\"; deny rules still apply")
  ),
  maxSteps: Options.integer("max-steps").pipe(Options.withDescription("stop after this many model steps"), Options.optional),
  command: Options.text("command").pipe(
    Options.withDescription("run a custom command (config, .agent/command/*.md, MCP prompts, init); the message is its arguments"),
    Options.optional
  )
}

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

const MIME_BY_EXTENSION: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".pdf": "application/pdf"
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
      const mime = MIME_BY_EXTENSION[path.extname(absolute).toLowerCase()]
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

/** Asks the user on the terminal: once, always, reject, or reject with a message. */
const askOnTerminal = (request: PermissionRequest) =>
  Effect.async<{ reply: "once" | "always" | "reject"; message?: string }>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr })
    const diff = typeof request.metadata.diff === "string" ? `${request.metadata.diff}\n` : ""
    rl.question(`${diff}Allow ${describeRequest(request)}? [o]nce, [a]lways, [r]eject, [m]essage: `, (answer) => {
      const choice = answer.trim().toLowerCase()
      if (choice.startsWith("m")) {
        rl.question("Tell the agent what to do instead: ", (text) => {
          rl.close()
          resume(Effect.succeed({ reply: "reject", message: text }))
        })
        return
      }
      rl.close()
      resume(Effect.succeed(choice.startsWith("a") ? { reply: "always" } : choice.startsWith("o") || choice === "y" ? { reply: "once" } : { reply: "reject" }))
    })
    return Effect.sync(() => rl.close())
  })

/** Asks the model's questions on the terminal: an option number (comma-separated when several) or free text. */
const answerOnTerminal = (request: QuestionRequest) =>
  Effect.async<ReadonlyArray<ReadonlyArray<string>>>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr })
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

export const runCommand = Command.make("run", { message, ...options }, (input) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const loop = yield* SessionLoop
    const bus = yield* Bus
    const permissions = yield* PermissionService
    const questions = yield* QuestionService
    const json = input.format === "json"
    const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true

    const wantsStdin = input.message.includes("-")
    const piped = yield* readStdin(wantsStdin)
    const words = input.message.filter((word) => word !== "-")
    const text = [words.join(" "), piped.trim()].filter((chunk) => chunk.length > 0).join("\n\n")
    const files = yield* fileParts(input.file, process.cwd())
    if (!text && files.length === 0 && Option.isNone(input.command)) return yield* new UsageError({ message: "nothing to do: give a message, pipe one in, or attach a file" })
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
          } else if (interactive) {
            const line = progressLine(sessionID, event)
            if (line) yield* Console.error(line)
          }
          if (event.type === "question.asked" && interactive) {
            const answers = yield* answerOnTerminal(event.properties)
            yield* questions.reply(event.properties.id, answers).pipe(Effect.ignore)
          }
          if (event.type === "permission.asked" && !input.autoApprove) {
            const request = event.properties
            if (interactive) {
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

    const common = {
      sessionID,
      ...(Option.isSome(input.agent) ? { agent: input.agent.value } : {}),
      ...(model ? { model } : {}),
      autoApprove: input.autoApprove,
      // Nobody can answer the model's questions without a terminal.
      ...(interactive ? {} : { tools: { question: false } }),
      ...(Option.isSome(input.maxSteps) ? { maxSteps: input.maxSteps.value } : {})
    }
    const commands = yield* CommandRegistry
    const outcome = yield* (Option.isSome(input.command)
      ? commands.execute({ ...common, command: input.command.value, arguments: text, parts: files }).pipe(
        Effect.catchTags({
          CommandNotFound: (error) => new UsageError({ message: error.message }),
          CommandError: (error) => new UsageError({ message: error.message })
        })
      )
      : loop.prompt({ ...common, parts: [...(text ? [{ type: "text" as const, text }] : []), ...files] })
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
  }).pipe(Effect.scoped)
).pipe(Command.withDescription("Run the agent on a message and print the answer (exit codes: see --help of agent)"))
