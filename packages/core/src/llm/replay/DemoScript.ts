/**
 * The built-in demo (`agent run --replay demo`): a script of steps, not recorded bytes, so it
 * works on any project. Each step is decided from the conversation so far — the real tools'
 * real results — the way a model would: plan a todo list and read the project's top directory,
 * read the file that looks most like its front page, grep for a word from it, edit that file,
 * tick off the todo list, answer.
 * Being a pure function of the prompt, the same project gives the same run every time.
 */
import type { LanguageModelV3Prompt } from "@ai-sdk/provider"
import * as path from "node:path"
import * as Prompts from "../../runtime/Prompts.js"

export interface DemoCall {
  readonly name: string
  readonly input: Record<string, unknown>
}

/** What the scripted model says in one step: some text, then tool calls (none ends the run). */
export interface DemoStep {
  readonly text?: string
  readonly calls: ReadonlyArray<DemoCall>
}

interface Result {
  readonly name: string
  readonly ok: boolean
  readonly text: string
}

/** The conversation since the user's latest message: the calls made and what each returned. */
interface State {
  readonly question: string
  readonly calls: ReadonlyArray<DemoCall & { readonly id: string }>
  readonly results: ReadonlyMap<string, Result>
  readonly tools: ReadonlyArray<string>
}

/** The line the demo adds to the file it edits (in the scratch copy). */
export const NOTE = "Explored by the agent demo (a scripted run on a scratch copy; the original project is unchanged)."

const FRONT_PAGES = [/^readme(\.(md|markdown|txt|rst))?$/i, /^package\.json$/, /^cargo\.toml$/i, /^pyproject\.toml$/, /^go\.mod$/, /^pom\.xml$/]
const TEXT_FILE = /\.(md|markdown|txt|rst|adoc|ts|tsx|js|mjs|py|rs|go|java|kt|c|h|cpp|rb|php|sh|toml|ya?ml|json)$/i
const PROSE = /\.(md|markdown|txt|rst|adoc)$/i
const COMMENT: ReadonlyArray<readonly [RegExp, string]> = [
  [/\.(ts|tsx|js|mjs|rs|go|java|kt|c|h|cpp|php)$/i, "// "],
  [/\.(py|rb|sh|toml|ya?ml)$/i, "# "]
]

const textOf = (output: { readonly type: string; readonly value?: unknown }): string =>
  typeof output.value === "string" ? output.value : JSON.stringify(output.value ?? "")

const stateOf = (prompt: LanguageModelV3Prompt, tools: ReadonlyArray<string>): State => {
  const start = prompt.findLastIndex((message) => message.role === "user")
  const user = prompt[start]
  // The first part is what the user typed; reminders and piped input come after it.
  const first = user?.role === "user" ? user.content[0] : undefined
  const question = first?.type === "text" ? first.text.trim() : ""
  const calls: Array<DemoCall & { readonly id: string }> = []
  const results = new Map<string, Result>()
  for (const message of prompt.slice(start + 1)) {
    for (const part of message.role === "assistant" || message.role === "tool" ? message.content : []) {
      if (part.type === "tool-call") {
        const input = typeof part.input === "string" ? JSON.parse(part.input) as Record<string, unknown> : part.input as Record<string, unknown>
        calls.push({ id: part.toolCallId, name: part.toolName, input })
      } else if (part.type === "tool-result") {
        const ok = !part.output.type.startsWith("error") && part.output.type !== "execution-denied"
        results.set(part.toolCallId, { name: part.toolName, ok, text: textOf(part.output) })
      }
    }
  }
  return { question, calls, results, tools }
}

const resultOf = (state: State, name: string): Result | undefined => {
  const call = state.calls.find((entry) => entry.name === name)
  return call ? state.results.get(call.id) : undefined
}

/** The second read: the front page, after the directory. */
const fileRead = (state: State): Result | undefined => {
  const call = state.calls.filter((entry) => entry.name === "read")[1]
  return call ? state.results.get(call.id) : undefined
}

/** The project's name and its top-level files and directories, from `read`'s directory listing. */
export const topLevel = (listing: string) => {
  const root = /<path>(.*)<\/path>/.exec(listing)?.[1] ?? ""
  const start = listing.indexOf("<entries>")
  const end = listing.indexOf("</entries>")
  const entries = start === -1 || end === -1
    ? []
    : listing.slice(start + "<entries>".length, end).split("\n").map((line) => line.trim()).filter((line) => line.length > 0 && !line.startsWith("("))
  return {
    name: path.basename(root),
    files: entries.filter((entry) => !entry.endsWith("/")),
    directories: entries.filter((entry) => entry.endsWith("/"))
  }
}

/** The file a reader would open first: a README, a manifest, else any text file. */
export const frontPage = (files: ReadonlyArray<string>): string | undefined => {
  for (const pattern of FRONT_PAGES) {
    const found = files.find((file) => pattern.test(file))
    if (found) return found
  }
  return files.find((file) => TEXT_FILE.test(file))
}

/** The numbered lines `read` showed, without their numbers. */
export const readLines = (output: string): ReadonlyArray<string> =>
  output.split("\n").flatMap((line) => {
    const match = /^(\d+): (.*)$/.exec(line)
    return match ? [match[2]!] : []
  })

/** A word from the file worth searching for (its title, usually), else TODO. */
export const searchWord = (lines: ReadonlyArray<string>): string => {
  for (const line of lines) {
    const word = /[A-Za-z][A-Za-z0-9_]{3,}/.exec(line)?.[0]
    if (word) return word
  }
  return "TODO"
}

/** The edit the demo makes: a line after the first line that occurs once, or a new notes file. */
export const demoEdit = (file: string | undefined, lines: ReadonlyArray<string>): Record<string, unknown> => {
  const create = { filePath: "DEMO-NOTES.md", oldString: "", newString: `# Demo notes\n\n${NOTE}\n` }
  if (file === undefined) return create
  const base = path.basename(file)
  const prefix = PROSE.test(base) || !base.includes(".") ? "" : COMMENT.find(([pattern]) => pattern.test(base))?.[1]
  if (prefix === undefined) return create
  const content = lines.join("\n")
  const anchor = lines.find((line) =>
    line.trim().length > 0 && !line.includes("(line truncated") && content.indexOf(line) === content.lastIndexOf(line)
  )
  if (anchor === undefined) return create
  return { filePath: file, oldString: anchor, newString: `${anchor}\n${prefix === "" ? "\n" : ""}${prefix}${NOTE}` }
}

const todos = (done: number) =>
  ["List the project's files", "Read its front page", "Search the code", "Make an edit (in the scratch copy)", "Summarize"].map((content, index) => ({
    content,
    status: index < done ? "completed" : index === done ? "in_progress" : "pending",
    priority: index === 3 ? "medium" : "high"
  }))

const clip = (text: string, length = 100) => text.length > length ? `${text.slice(0, length - 3)}...` : text

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

const enumerate = (names: ReadonlyArray<string>) =>
  names.length <= 8 ? names.join(", ") : `${names.slice(0, 8).join(", ")} and ${names.length - 8} more`

const answer = (state: State): string => {
  const listing = resultOf(state, "read")
  const top = listing?.ok ? topLevel(listing.text) : undefined
  const readCall = state.calls.filter((call) => call.name === "read")[1]
  const read = fileRead(state)
  const grepCall = state.calls.find((call) => call.name === "grep")
  const grep = resultOf(state, "grep")
  const editCall = state.calls.find((call) => call.name === "edit")
  const edit = resultOf(state, "edit")
  const first = read?.ok ? readLines(read.text).find((line) => line.trim().length > 0) : undefined
  const fill: Record<string, string> = {
    project: top?.name || "this project",
    entries: top
      ? `${count(top.directories.length, "directory", "directories")} and ${count(top.files.length, "file", "files")} at its top level${top.files.length > 0 ? `: ${enumerate(top.files)}` : ""}`
      : "nothing I could list",
    read: readCall === undefined
      ? "There was no text file at the top level to read."
      : read?.ok ? `${String(readCall.input["filePath"])} begins with "${clip(first?.trim() ?? "")}".` : `Reading ${String(readCall.input["filePath"])} failed: ${clip(read?.text ?? "no result")}.`,
    grep: grepCall === undefined ? "I did not search." : `Searching for "${String(grepCall.input["pattern"])}": ${clip(grep?.text.split("\n")[0] ?? "no result")}.`,
    edit: editCall === undefined
      ? "I made no edit (the edit tool is not available to this agent)."
      : edit?.ok ? `I changed ${String(editCall.input["filePath"])} in the scratch copy (its diff is in the run's output); your project is unchanged.` : `The edit of ${String(editCall.input["filePath"])} did not happen: ${clip(edit?.text ?? "no result")}.`,
    question: clip(state.question, 200)
  }
  return Prompts.read("demo/answer.txt").replace(/\{\{(\w+)\}\}/g, (_, key: string) => fill[key] ?? "")
}

/** The demo's next step, given the conversation so far and the tools offered. */
export const nextStep = (prompt: LanguageModelV3Prompt, tools: ReadonlyArray<string>): DemoStep => {
  // A call offering no tools is a title or a summary, not a step of the run.
  if (tools.length === 0) return { text: "A look around the project (demo)", calls: [] }
  const state = stateOf(prompt, tools)
  const made = (name: string) => state.calls.filter((call) => call.name === name).length
  const offered = (name: string) => tools.includes(name)
  const listing = resultOf(state, "read")
  const file = listing?.ok ? frontPage(topLevel(listing.text).files) : undefined
  const read = fileRead(state)
  const lines = read?.ok ? readLines(read.text) : []

  if (!offered("read")) return { text: answer(state), calls: [] }
  if (made("read") === 0) {
    const plan = offered("todowrite") ? [{ name: "todowrite", input: { todos: todos(0) } }] : []
    return { text: "This is the built-in demo: a scripted model driving the real tools. First, a plan and a look at the files.", calls: [...plan, { name: "read", input: { filePath: "." } }] }
  }
  if (made("read") === 1 && file !== undefined) {
    return { text: `${file} looks like the place to start.`, calls: [{ name: "read", input: { filePath: file } }] }
  }
  if (made("grep") === 0 && offered("grep")) {
    const word = searchWord(lines)
    return { text: `Where else does "${word}" come up?`, calls: [{ name: "grep", input: { pattern: word } }] }
  }
  if (made("edit") === 0 && offered("edit")) {
    return { text: "Now an edit, to show the approval prompt and the diff. It goes to the scratch copy.", calls: [{ name: "edit", input: demoEdit(read?.ok ? file : undefined, lines) }] }
  }
  if (made("todowrite") === 1) return { text: "All done.", calls: [{ name: "todowrite", input: { todos: todos(5) } }] }
  return { text: answer(state), calls: [] }
}
