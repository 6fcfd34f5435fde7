// `agent run` from the flags to the exit code, against a runtime in this process (Run.ts) or a
// running `agent serve` (Attach.ts): both print the same output and earn the same exit codes.
import { attachmentMime, MAX_ATTACHMENT_BYTES } from "@agent/core/tool/Attachment"
import {
  type AgentNotFound,
  type ApproverConfig,
  type BusEvent,
  type DefaultAgentError,
  type MessageError,
  type ModelRef,
  type NotifyConfig,
  parseModelRef,
  type Part,
  type PermissionRequest,
  type QuestionRequest,
  type RunStopReason,
  type SessionID,
  type TokenUsage
} from "@agent/domain"
import { Console, Effect, Fiber, Option, type Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { AgentChoice } from "./AgentChoice.js"
import { ExitCode, UsageError } from "./ExitCode.js"
import { jsonEvent } from "./JsonEvents.js"
import * as LiveProgress from "./LiveProgress.js"
import type { RunInput } from "./RunCommand.js"
import * as RunResult from "./RunResult.js"
import { approverSettings, type ApproverSettings, describeSettings } from "@agent/server/ApproverSettings"
import { askNotification, endNotification, makeNotifier, type Notifier } from "@agent/server/Notify"
import { askApprover } from "@agent/server/RemoteApprover"
import { askOnTerminal, type PermissionAnswer } from "./ApprovalPrompt.js"
import * as RunApprovals from "./RunApprovals.js"
import { answerOnTerminal, describeRequest, readPrompt, readStdin } from "./RunTerminal.js"

/** A part of the user's message: the text, and the `-f` files. */
export type PromptPart =
  | { readonly type: "text"; readonly text: string; readonly synthetic?: boolean }
  | { readonly type: "file"; readonly mime: string; readonly url: string; readonly filename: string }

/** One prompt (or the `--command`, the message being its arguments) to run to its end. */
export interface TurnRequest {
  readonly sessionID: SessionID
  readonly parts: ReadonlyArray<PromptPart>
  readonly command?: { readonly name: string; readonly arguments: string }
  readonly agent?: string
  /** As typed: `provider/model` (already checked). */
  readonly model?: string
  readonly autoApprove: boolean
  /** Whether the model may ask the user questions: only when someone is at a terminal. */
  readonly questions: boolean
  readonly maxSteps?: number
  readonly variant?: string
}

export interface TurnOutcome {
  readonly reason: RunStopReason
  readonly error?: MessageError
  readonly usage: { readonly cost: number; readonly tokens: number; readonly steps: number }
  /** The final answer: the text of the run's last assistant message. */
  readonly answer: string
}

/** Where the run happens: the operations `agent run` needs, whatever carries them out. */
export interface RunTarget<E> {
  /** Where relative `-f` paths are read from. */
  readonly directory: string
  /** Whether the runtime answers asks itself under `--auto-approve` (else the run replies "once"). */
  readonly approvesItself: boolean
  /** Where "always" answers are kept, shown before the user answers. */
  readonly approvals: string
  /**
   * What `--agent` runs (AgentChoice.ts); without it, checks that the default agent can run, so a
   * `default_agent` naming nothing fails before the session is touched.
   */
  readonly chooseAgent: (wanted: string | undefined) => Effect.Effect<AgentChoice, E | AgentNotFound | DefaultAgentError>
  readonly findSession: (id: string) => Effect.Effect<SessionID, E | UsageError>
  /** The most recent top-level session. */
  readonly latestSession: Effect.Effect<SessionID | undefined, E>
  readonly createSession: (title: string | undefined) => Effect.Effect<SessionID, E>
  readonly forkSession: (id: SessionID) => Effect.Effect<SessionID, E>
  /** The events of the session's runs (its subagents' included), live once this returns. */
  readonly subscribe: (sessionID: SessionID) => Effect.Effect<Stream.Stream<BusEvent, E>, E, Scope.Scope>
  readonly replyPermission: (request: PermissionRequest, answer: PermissionAnswer) => Effect.Effect<void>
  /** The user's answers, or `undefined` to dismiss the questions. */
  readonly replyQuestion: (request: QuestionRequest, answers: ReadonlyArray<ReadonlyArray<string>> | undefined) => Effect.Effect<void>
  readonly turn: (request: TurnRequest) => Effect.Effect<TurnOutcome, E | UsageError>
  /** Stops the session's run: tools are cancelled, their parts marked interrupted. */
  readonly abort: (sessionID: SessionID) => Effect.Effect<void>
  /** `permission.approver` of the configuration in force (none for `--attach`: the server holds its asks). */
  readonly approverConfig: ApproverConfig | undefined
  /**
   * `--attach`: how the server answers the asks of its sessions that nobody answers here (its own
   * `permission.approver`: a webhook, a timeout, the fallback), read when the run is headless.
   */
  readonly serverApprover?: Effect.Effect<ApproverSettings | undefined>
  /** `notify` of the configuration in force. */
  readonly notifyConfig: NotifyConfig | undefined
  /** The model, agent, tools, MCP servers and hooks of a run, for the `init` event. */
  readonly describe: (agent: string | undefined, model: string | undefined) => Effect.Effect<RunApprovals.RunDescription>
  /** The session's token and cost totals, for the result event. */
  readonly totals: (sessionID: SessionID) => Effect.Effect<Option.Option<{ readonly tokens?: TokenUsage | undefined; readonly cost?: number | undefined }>>
}

/** Exit code for each way a run can end. */
export const exitCodeOf = (reason: RunStopReason): number => {
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

/** The answer: the text parts of a message, as the user reads them. */
export const answerOf = (parts: ReadonlyArray<Part>) =>
  parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : [])).join("\n").trim()

/** `-f` files: images and PDFs as attachments, anything else inlined as text. */
const fileParts = (files: ReadonlyArray<string>, directory: string) =>
  Effect.forEach(files, (file) =>
    Effect.gen(function*() {
      const absolute = path.resolve(directory, file)
      const stat = yield* Effect.try(() => fs.statSync(absolute)).pipe(
        Effect.mapError(() => new UsageError({ message: `file not found: ${file}` }))
      )
      if (!stat.isFile()) return yield* new UsageError({ message: `not a file: ${file}` })
      if (stat.size > MAX_ATTACHMENT_BYTES) return yield* new UsageError({ message: `file too large (over 10 MB): ${file}` })
      const mime = attachmentMime(absolute)
      if (mime) {
        const data = fs.readFileSync(absolute).toString("base64")
        return { type: "file", mime, url: `data:${mime};base64,${data}`, filename: path.basename(absolute) } satisfies PromptPart
      }
      const content = fs.readFileSync(absolute, "utf8")
      return { type: "text", text: `<file path="${absolute}">\n${content}\n</file>`, synthetic: true } satisfies PromptPart
    }))

/** A line on stderr for a terminal watching a run whose output is piped: which tool ran, with its title. */
const progressLine = (sessionID: SessionID, event: BusEvent): string | undefined => {
  if (event.type !== "message.part.updated") return undefined
  const part = event.properties.part
  if (part.sessionID !== sessionID || part.type !== "tool") return undefined
  if (part.state.status === "completed") return `  ${part.tool.padEnd(10)} ${part.state.title}`
  if (part.state.status === "error") return `  ${part.tool.padEnd(10)} failed: ${part.state.error.split("\n")[0]}`
  return undefined
}

const EXIT_COMMANDS = new Set(["/exit", "/quit"])

/** Whether someone can answer questions: stdin and stderr are a terminal. */
export const atTerminal = () => process.stdin.isTTY === true && process.stderr.isTTY === true

/** What one `agent run` has settled before its turns: shared by the functions below. */
interface Run<E> {
  readonly input: RunInput
  readonly target: RunTarget<E>
  readonly report: RunResult.RunReport
  readonly sessionID: SessionID
  readonly chosen: AgentChoice
  readonly json: boolean
  /** Someone can answer questions (stdin and stderr are a terminal). */
  readonly terminal: boolean
  /** The live view, when stdout is a terminal and the format is the default. */
  readonly view: LiveProgress.LiveProgress | undefined
  /** Parts already printed as JSON events (each once). */
  readonly printedParts: Set<string>
  /** Who answers asks when nobody is at the terminal (none: they are rejected). */
  readonly approver: ApproverSettings | undefined
  readonly notifier: Notifier
  /** Asks the approver holds, by request id: withdrawn when the run answers them otherwise. */
  readonly holding: Map<string, Fiber.RuntimeFiber<void>>
}

/** The session the run goes to: `--session`, `--continue`'s latest or a new one; forked with `--fork`. */
const openSession = <E>(input: RunInput, target: RunTarget<E>, text: string) =>
  Effect.gen(function*() {
    let sessionID: SessionID
    if (Option.isSome(input.session)) {
      sessionID = yield* target.findSession(input.session.value)
    } else if (input.continue) {
      const latest = yield* target.latestSession
      if (!latest) return yield* new UsageError({ message: "no session to continue in this project" })
      sessionID = latest
    } else {
      const title = Option.getOrUndefined(input.title)
      sessionID = yield* target.createSession(title !== undefined ? title || text.slice(0, 50) : undefined)
    }
    return input.fork ? yield* target.forkSession(sessionID) : sessionID
  })

/** Gives the terminal to a question (or a line on stderr), and back. */
const asking = <E, A>(run: Run<E>, question: Effect.Effect<A>) => {
  const view = run.view
  return view ? Effect.sync(view.pause).pipe(Effect.zipRight(question), Effect.ensuring(Effect.sync(view.resume))) : question
}

/** Shows one event of the run: a JSON line, the live view, or a line on stderr for a watching terminal. */
const showEvent = <E>(run: Run<E>, event: BusEvent) =>
  Effect.gen(function*() {
    const { sessionID } = run
    if (run.json) {
      const line = jsonEvent(sessionID, event, run.printedParts)
      if (line) yield* Console.log(JSON.stringify(line))
    } else if (run.view) {
      run.view.event(event)
    } else if (event.type === "session.retry" && event.properties.sessionID === sessionID) {
      yield* Console.error(LiveProgress.retryLine(event.properties, event.properties.delay))
    } else if (run.terminal) {
      const line = progressLine(sessionID, event)
      if (line) yield* Console.error(line)
    }
  })

/** Answers a question or permission the run asks: at the terminal, by `--auto-approve`, by the approver, or rejected. */
const answerAsk = <E>(run: Run<E>, event: BusEvent) =>
  Effect.gen(function*() {
    const { input, target } = run
    if (event.type === "question.asked") {
      // Without a terminal the model is not offered the question tool; a command may still ask.
      const answers = run.terminal ? yield* asking(run, answerOnTerminal(event.properties)) : undefined
      yield* target.replyQuestion(event.properties, answers)
    }
    if (event.type === "permission.denied") return RunApprovals.recordDenial(run.report, RunApprovals.eventDenial(event))
    if (event.type === "permission.replied") {
      // Answered here (or withdrawn): the approver's hold on it ends.
      const held = run.holding.get(event.properties.requestID)
      if (held) yield* Fiber.interrupt(held)
      return
    }
    if (event.type !== "permission.asked") return
    const request = event.properties
    yield* run.notifier.send(askNotification(request, target.directory))
    if (input.autoApprove && request.requiresPerson === undefined) {
      if (!target.approvesItself) yield* target.replyPermission(request, { reply: "once" })
    } else if (run.terminal) {
      const answer = yield* asking(run, askOnTerminal(request, target.approvals))
      if (answer.reply === "reject") {
        RunApprovals.recordDenial(run.report, RunApprovals.askDenial(request, { type: "person", via: "terminal", ...(answer.message ? { message: answer.message } : {}) }))
      }
      yield* target.replyPermission(request, answer)
    } else if (run.approver?.here !== undefined) {
      // `--attach` to a server with an approver: the server holds the ask for its approver and
      // answers it (or its fallback does); the answer arrives as the server's reply.
      yield* Console.error(`agent: permission asked for ${describeRequest(request)}; waiting up to ${run.approver.timeout} s for ${describeSettings(run.approver)}`)
    } else if (run.approver !== undefined && (request.requiresPerson === undefined || run.approver.server !== undefined)) {
      yield* holdForApprover(run, request, run.approver)
    } else {
      // No one can answer: reject, and say so where a script's author will look.
      const line = request.requiresPerson !== undefined
        ? `agent: permission asked for ${describeRequest(request)}; rejected: only a person may approve it (${request.requiresPerson}), and there is no terminal to ask${input.autoApprove ? "; --auto-approve does not answer it" : ""}`
        : `agent: permission asked for ${describeRequest(request)}; rejected (no terminal to ask; pass --auto-approve to allow)`
      yield* asking(run, Console.error(line))
      RunApprovals.recordDenial(run.report, RunApprovals.askDenial(request, { type: "headless" }))
      yield* target.replyPermission(request, { reply: "reject" })
    }
  })

/**
 * A headless ask goes to the approver, on its own fiber so the run's events go on being shown.
 * An ask only a person may answer goes to the server alone (a webhook may be a script) and never
 * to an `allow` fallback.
 */
const holdForApprover = <E>(run: Run<E>, request: PermissionRequest, approver: ApproverSettings) =>
  Effect.gen(function*() {
    const settings: ApproverSettings = request.requiresPerson === undefined
      ? approver
      : { ...(approver.server ? { server: approver.server } : {}), timeout: approver.timeout, fallback: "deny" }
    yield* Console.error(`agent: permission asked for ${describeRequest(request)}; waiting up to ${settings.timeout} s for ${describeSettings(settings)}`)
    const fiber = yield* askApprover(settings, request, run.target.directory).pipe(
      Effect.tap((verdict) =>
        Effect.sync(() => {
          run.holding.delete(request.id)
          if (verdict.answer.reply === "reject") RunApprovals.recordDenial(run.report, RunApprovals.askDenial(request, verdict.decidedBy))
        })
      ),
      Effect.flatMap((verdict) => run.target.replyPermission(request, verdict.answer)),
      Effect.ensuring(Effect.sync(() => run.holding.delete(request.id))),
      Effect.catchAllCause((cause) => Effect.logError("permission approver stopped", cause)),
      Effect.forkScoped
    )
    run.holding.set(request.id, fiber)
  })

/** The end of a turn: the result event, or the answer on stdout and any failure on stderr. */
const printResult = <E>(run: Run<E>, outcome: TurnOutcome, code: number) =>
  Effect.gen(function*() {
    if (run.json) {
      // A database that fails here still gets its result line, without the session's totals.
      const totals = yield* run.target.totals(run.sessionID).pipe(Effect.catchAllDefect(() => Effect.succeed(Option.none())))
      yield* RunResult.printResult(run.report, {
        status: outcome.reason,
        exitCode: code,
        reason: outcome.error?.data.message ?? outcome.reason,
        text: outcome.answer,
        steps: outcome.usage.steps,
        tokens: Option.match(totals, { onNone: () => undefined, onSome: (info) => info.tokens }),
        cost: Option.match(totals, { onNone: () => outcome.usage.cost, onSome: (info) => info.cost ?? 0 })
      })
    } else {
      // The live view has shown the answer as it streamed.
      if (outcome.answer && !run.view?.shown(outcome.answer)) yield* Console.log(outcome.answer)
      if (outcome.reason !== "completed") {
        yield* Console.error(`agent: run ${outcome.reason}${outcome.error ? `: ${outcome.error.data.message}` : ""}`)
      }
    }
  })

/** One prompt (or, first, the `--command` with the message as its arguments), run to its end; the exit code it earns. */
const runTurn = <E>(run: Run<E>, parts: ReadonlyArray<PromptPart>, command?: { readonly name: string; readonly arguments: string }) =>
  Effect.gen(function*() {
    const { input, sessionID, target, view } = run
    run.report.printed = false
    run.report.denials = []
    if (view) view.start()
    const outcome = yield* target.turn({
      sessionID,
      parts,
      ...(command ? { command } : {}),
      ...(run.chosen.agent !== undefined ? { agent: run.chosen.agent } : {}),
      ...(Option.isSome(input.model) ? { model: input.model.value } : {}),
      autoApprove: input.autoApprove,
      questions: run.terminal,
      ...(Option.isSome(input.maxSteps) ? { maxSteps: input.maxSteps.value } : {}),
      ...(Option.isSome(input.variant) ? { variant: input.variant.value } : {})
    }).pipe(
      Effect.ensuring(Effect.sync(() => view?.stop())),
      // Ctrl-C: stop the run cleanly (tools killed, parts marked), report, exit 130.
      Effect.onInterrupt(() =>
        target.abort(sessionID).pipe(
          Effect.zipRight(printResult(run, { reason: "aborted", usage: { cost: 0, tokens: 0, steps: 0 }, answer: "" }, ExitCode.interrupted))
        )
      )
    )
    const code = exitCodeOf(outcome.reason)
    yield* printResult(run, outcome, code)
    yield* run.notifier.send(endNotification(sessionID, target.directory, { ...outcome, exitCode: code }))
    return code
  })

/**
 * Runs the flags' prompt (and, with `-i`, the ones typed after it) on the target; the exit code.
 * `report` tells the caller what is left to say if this fails (see RunResult.ts).
 */
export const runOn = <E>(input: RunInput, target: RunTarget<E>, report: RunResult.RunReport) =>
  Effect.gen(function*() {
    const terminal = atTerminal()
    const json = input.format === "json"
    const live = !json && process.stdout.isTTY === true
    // Before stdin is waited for or a session touched: a bad agent choice is a configuration problem.
    const chosen = yield* target.chooseAgent(Option.getOrUndefined(input.agent))
    if (chosen.note) yield* Console.error(`agent: ${chosen.note}`)
    const approver = approverSettings(target.approverConfig, {
      ...(Option.isSome(input.approver) ? { approver: input.approver.value } : {}),
      ...(Option.isSome(input.approverTimeout) ? { timeout: input.approverTimeout.value } : {}),
      ...(Option.isSome(input.approverFallback) ? { fallback: input.approverFallback.value } : {})
    }, process.env)
    if (typeof approver === "string") return yield* new UsageError({ message: approver })
    const headless = !terminal
    const approverInForce = approver ?? (headless && target.serverApprover ? yield* target.serverApprover : undefined)

    const wantsStdin = input.message.includes("-")
    const piped = yield* readStdin(wantsStdin)
    const words = input.message.filter((word) => word !== "-")
    const text = [words.join(" "), piped.trim()].filter((chunk) => chunk.length > 0).join("\n\n")
    const files = yield* fileParts(input.file, target.directory)
    if (!text && files.length === 0 && !input.interactive && Option.isNone(input.command)) {
      return yield* new UsageError({ message: "nothing to do: give a message, pipe one in, or attach a file" })
    }
    if (input.fork && !input.continue && Option.isNone(input.session)) {
      return yield* new UsageError({ message: "--fork needs --continue or --session" })
    }
    const model: ModelRef | undefined = Option.isSome(input.model) ? parseModelRef(input.model.value) : undefined
    if (Option.isSome(input.model) && !model) return yield* new UsageError({ message: `--model must be provider/model, got "${input.model.value}"` })

    const sessionID = yield* openSession(input, target, text)
    report.sessionID = sessionID

    const view = live
      ? LiveProgress.make({
        sessionID,
        write: (chunk) => void process.stdout.write(chunk),
        ansi: LiveProgress.ansiAllowed(),
        // A terminal that does not say its width (0) is taken as 80 columns.
        columns: () => process.stdout.columns || 80
      })
      : undefined
    const notifier = yield* makeNotifier(target.notifyConfig)
    const run: Run<E> = {
      input, target, report, sessionID, chosen, json, terminal, view, printedParts: new Set(), approver: approverInForce, notifier, holding: new Map()
    }
    if (json) {
      const description = yield* target.describe(chosen.agent, Option.getOrUndefined(input.model))
      const mode = RunApprovals.permissionMode({ autoApprove: input.autoApprove, terminal, approver: approverInForce })
      yield* Console.log(JSON.stringify(RunApprovals.initEvent(sessionID, target.directory, description, mode)))
    }

    // Every event of the run, from before the prompt, so nothing is missed.
    const events = yield* target.subscribe(sessionID)
    yield* events.pipe(
      Stream.runForEach((event) => Effect.zipRight(showEvent(run, event), answerAsk(run, event))),
      Effect.catchAllCause((cause) => Effect.logError("event printer stopped", cause)),
      Effect.forkScoped
    )

    const code = yield* runTurns(run, text, files)
    yield* notifier.settle
    return code
  }).pipe(Effect.scoped)

/** The flags' prompt, then with `-i` the ones typed after it; the exit code of the last. */
const runTurns = <E>(run: Run<E>, text: string, files: ReadonlyArray<PromptPart>) =>
  Effect.gen(function*() {
    const { input } = run
    let code: number = ExitCode.ok
    if (Option.isSome(input.command)) code = yield* runTurn(run, files, { name: input.command.value, arguments: text })
    else if (text || files.length > 0) code = yield* runTurn(run, [...(text ? [{ type: "text" as const, text }] : []), ...files])
    if (!input.interactive) return code
    // The conversation goes on in the same session until /exit or the end of input.
    for (;;) {
      const line = yield* readPrompt
      if (line === undefined || EXIT_COMMANDS.has(line.trim())) return code
      if (line.trim()) code = yield* runTurn(run, [{ type: "text", text: line.trim() }])
    }
  })
