// The permission question at the terminal. Before anyone answers it says what "always" would
// store (the exact rules) and where, and it takes a single keypress (raw mode), so an answer is
// one key, not a word and Enter.
import type { PermissionRequest } from "@agent/domain"
import { Effect } from "effect"
import { describeRequest, openTerminal } from "./RunTerminal.js"

export type PermissionAnswer = { readonly reply: "once" | "always" | "reject"; readonly message?: string }

type Choice = PermissionAnswer["reply"] | "message"

const KEYS: Record<string, Choice> = { o: "once", y: "once", a: "always", r: "reject", n: "reject", m: "message" }

/** The choice a key (or, without raw mode, a typed word) stands for. */
export const parsePermissionAnswer = (answer: string): Choice | undefined => {
  const choice = answer.trim().toLowerCase()
  if (choice === "once" || choice === "yes") return "once"
  if (choice === "always") return "always"
  if (choice === "reject" || choice === "no") return "reject"
  if (choice === "message") return "message"
  return KEYS[choice]
}

/** What answering "always" stores: the rules, and the file (or place) they are kept in. */
export const alwaysLine = (request: PermissionRequest, location: string): string =>
  request.always.length === 0
    ? "  [a]lways stores nothing for this ask: it is the same as once"
    : `  [a]lways allows from now on, in this project: ${request.permission} ${
      request.always.map((pattern) => JSON.stringify(pattern)).join(", ")
    }\n    (kept in ${location})`

/** The whole question as shown: the diff, who must answer, what "always" stores, the choices. */
export const permissionPrompt = (request: PermissionRequest, location: string, singleKey: boolean): string =>
  [
    ...(typeof request.metadata.diff === "string" ? [request.metadata.diff] : []),
    ...(request.requiresPerson === undefined ? [] : [`(asked of a person: ${request.requiresPerson})`]),
    `Allow ${describeRequest(request)}?`,
    alwaysLine(request, location),
    `[o]nce, [a]lways, [r]eject, [m]essage ${singleKey ? "(press a key)" : "(then Enter)"}: `
  ].join("\n")

/**
 * Shows `prompt`, then reads one key from the terminal in raw mode (`undefined` for a key that
 * means nothing here). Raw mode is on before the prompt shows, so a key typed at once is neither
 * echoed nor held back waiting for Enter. Enter alone is ignored. Ctrl-C aborts the run (SIGINT),
 * as it does everywhere.
 */
const readKey = (prompt: string) =>
  Effect.async<Choice | undefined>((resume) => {
    const stdin = process.stdin
    const wasRaw = stdin.isRaw
    const stop = () => {
      stdin.removeListener("data", onData)
      stdin.setRawMode(wasRaw)
      stdin.pause()
    }
    const onData = (chunk: Buffer | string) => {
      // A chunk may hold an Enter before the key, or the Enter after it ("a\r"): the first key is the answer.
      const key = [...chunk.toString()].find((char) => char !== "\r" && char !== "\n")
      if (key === undefined) return
      stop()
      if (key === "\x03") return void process.kill(process.pid, "SIGINT")
      resume(Effect.succeed(KEYS[key.toLowerCase()]))
    }
    stdin.setRawMode(true)
    stdin.on("data", onData)
    stdin.resume()
    process.stderr.write(prompt)
    return Effect.sync(stop)
  })

/** A line typed at the terminal (readline; Ctrl-C aborts the run). */
const readLine = (prompt: string) =>
  Effect.async<string>((resume) => {
    const rl = openTerminal()
    rl.question(prompt, (answer) => {
      rl.close()
      resume(Effect.succeed(answer))
    })
    return Effect.sync(() => rl.close())
  })

/** Asks the user on the terminal: once, always, reject, or reject with a message for the agent. */
export const askOnTerminal = (request: PermissionRequest, location: string) =>
  Effect.gen(function*() {
    const singleKey = typeof process.stdin.setRawMode === "function"
    let prompt = permissionPrompt(request, location, singleKey)
    let choice: Choice | undefined
    while (choice === undefined) {
      choice = singleKey ? yield* readKey(prompt) : parsePermissionAnswer(yield* readLine(prompt))
      prompt = `\nPlease answer o, a, r or m${singleKey ? "" : " (then Enter)"}: `
    }
    // The key is not echoed in raw mode: say what was chosen.
    if (singleKey) process.stderr.write(`${choice}\n`)
    if (choice !== "message") return { reply: choice } satisfies PermissionAnswer
    const message = yield* readLine("Tell the agent what to do instead: ")
    return { reply: "reject", message } satisfies PermissionAnswer
  })
