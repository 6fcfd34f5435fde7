import type { BusEvent, Part } from "@agent/domain"
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider"
import { ScriptedModel, type ScriptedTurn, TestInstance, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Bus } from "../../src/runtime/Bus.js"
import { CommandRegistry } from "../../src/session/CommandRegistry.js"
import * as CommandTemplate from "../../src/session/CommandTemplate.js"
import { loadConfig } from "../../src/config/ConfigService.js"
import { SessionStore } from "../../src/store/SessionStore.js"

const { toolCall } = ScriptedModel

const userText = (call: LanguageModelV3CallOptions) => ScriptedModel.lastUserText(call)
const textOf = (parts: ReadonlyArray<{ type: string; text?: string }>) =>
  parts.flatMap((part) => (part.type === "text" ? [part.text!] : [])).join("\n")

/** Runs `body` against a full runtime over a sandbox holding `files`, with a scripted model. */
const withRuntime = <A, E>(
  options: { readonly files?: Record<string, string | object>; readonly env?: Record<string, string>; readonly turns?: ReadonlyArray<ScriptedTurn> },
  body: (context: { readonly model: ScriptedModel; readonly root: string }) => Effect.Effect<A, E, CommandRegistry | SessionStore | Bus | Scope.Scope>
) =>
  Effect.gen(function*() {
    const model = ScriptedModel.make(options.turns ?? ["Done."])
    const runtime = yield* TestRuntime.make({ model, files: options.files ?? {}, ...(options.env ? { env: options.env } : {}) })
    return yield* body({ model, root: runtime.box.root }).pipe(Effect.provide(runtime.layer))
  })

describe("argument parsing", () => {
  it("splits on spaces, groups quoted words and drops the quotes", () => {
    expect(CommandTemplate.parseArguments(`one "two three" 'four five'  six`)).toEqual(["one", "two three", "four five", "six"])
    expect(CommandTemplate.parseArguments("   ")).toEqual([])
  })

  it("fills $1, $2 in order, the last placeholder takes the rest, $ARGUMENTS is the raw text", () => {
    const template = "From $1 to $2. All: $ARGUMENTS"
    const fill = CommandTemplate.argumentFill(template, `main "feature x" extra words`)
    expect(CommandTemplate.fillArguments(template, fill)).toBe(`From main to feature x extra words. All: main "feature x" extra words`)
    // Missing arguments are empty, not left as "$2".
    expect(CommandTemplate.fillArguments(template, CommandTemplate.argumentFill(template, "only"))).toBe("From only to . All: only")
    expect(CommandTemplate.hints("a $2 b $1 c $2 $ARGUMENTS")).toEqual(["$1", "$2", "$ARGUMENTS"])
  })

  it("finds @file references but not e-mail addresses, and strips trailing punctuation", () => {
    expect(CommandTemplate.fileReferences("see @src/a.ts, @docs/ and me@example.com; then @src/a.ts.")).toEqual(["src/a.ts", "docs/"])
  })
})

describe("commands from config", () => {
  it.scopedLive("lists the built-in init, JSON commands and markdown commands from every config dir with where they came from", () =>
    withRuntime({
      files: {
        "project/agent.json": { command: { hello: { template: "Say hello to $1", description: "greet" } } },
        "project/.agent/command/git/review.md": "---\ndescription: review a branch\nagent: plan\nmodel: test/small\n---\nReview $ARGUMENTS\n",
        "project/.opencode/commands/legacy.md": "Legacy template",
        "home/.config/agent/commands/global.md": "---\nsubtask: true\n---\nFrom the global dir"
      }
    }, ({ root }) =>
      Effect.gen(function*() {
        const commands = yield* (yield* CommandRegistry).list()
        expect(commands.map((command) => command.name)).toEqual(["git/review", "global", "hello", "init", "legacy"])
        const byName = new Map(commands.map((command) => [command.name, command]))
        expect(byName.get("git/review")).toEqual({
          name: "git/review",
          description: "review a branch",
          agent: "plan",
          model: "test/small",
          source: "config",
          template: "Review $ARGUMENTS",
          hints: ["$ARGUMENTS"],
          file: path.join(root, "project/.agent/command/git/review.md")
        })
        expect(byName.get("hello")).toMatchObject({ source: "config", hints: ["$1"], file: path.join(root, "project/agent.json") })
        expect(byName.get("global")).toMatchObject({ subtask: true, template: "From the global dir" })
        expect(byName.get("init")).toMatchObject({ source: "builtin", hints: ["$ARGUMENTS"] })
        expect(byName.get("init")!.template).toContain("AGENTS.md")
      })))

  it.scopedLive("a markdown command with an unknown front matter key is an error naming the file, line and key", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox({
        files: { "project/.agent/command/deploy.md": "---\ndescription: ship it\nagnet: build\n---\nDeploy now.\n" }
      })
      const error = yield* Effect.flip(loadConfig(box.instance))
      expect(error.message).toBe(
        `${box.path("project/.agent/command/deploy.md")}:3: command.deploy.agnet: unrecognized key "agnet" (expected: "template" | "description" | "agent" | "model" | "subtask")`
      )
    }))

  it.scopedLive("an unknown command names the ones that exist", () =>
    withRuntime({ files: { "project/agent.json": { command: { hello: { template: "hi" } } } } }, () =>
      Effect.gen(function*() {
        const error = yield* Effect.flip((yield* CommandRegistry).get("helo"))
        expect(error._tag).toBe("CommandNotFound")
        expect(error.message).toBe(`Command "helo" not found. Available commands: hello, init`)
      })))
})

describe("running a command", () => {
  it.scopedLive("substitutes arguments, runs as a prompt on the session and publishes command.executed", () =>
    withRuntime({
      files: { "project/agent.json": { command: { compare: { template: "Compare $1 with $2. Context: $ARGUMENTS" } } } }
    }, ({ model }) =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const events = yield* (yield* Bus).subscribe({ types: ["command.executed"] })
        const session = yield* store.create({ title: "Commands" })
        const outcome = yield* (yield* CommandRegistry).execute({
          sessionID: session.id,
          command: "compare",
          arguments: `v1 "v2 beta" now`
        })
        expect(outcome.reason).toBe("completed")
        expect(userText(model.calls[0]!)).toBe(`Compare v1 with v2 beta now. Context: v1 "v2 beta" now`)
        const [user] = yield* store.messages(session.id)
        expect(user!.info.id).toBe(outcome.messageID)
        const [event] = yield* Stream.runCollect(Stream.take(events, 1))
        expect(event).toEqual({
          type: "command.executed",
          properties: { name: "compare", sessionID: session.id, arguments: `v1 "v2 beta" now`, messageID: outcome.messageID }
        } satisfies BusEvent)
      })))

  it.scopedLive("a template without placeholders gets the arguments appended", () =>
    withRuntime({ files: { "project/agent.json": { command: { fix: { template: "Fix the failing tests." } } } } }, ({ model }) =>
      Effect.gen(function*() {
        const session = yield* (yield* SessionStore).create({})
        yield* (yield* CommandRegistry).execute({ sessionID: session.id, command: "fix", arguments: "only in src/parser" })
        expect(userText(model.calls[0]!)).toBe("Fix the failing tests.\n\nonly in src/parser")
      })))

  it.scopedLive("replaces !`command` with its output, run in the project directory; failures show inline; arguments are never run", () =>
    withRuntime({
      files: {
        "project/agent.json": {
          command: {
            status: {
              template: "Dir: !`pwd`\nGreeting: !`echo hello $1`\nBroken: !`echo partial; echo oops >&2; exit 3`\nNote: $2"
            }
          }
        }
      }
    }, ({ model, root }) =>
      Effect.gen(function*() {
        const session = yield* (yield* SessionStore).create({})
        yield* (yield* CommandRegistry).execute({ sessionID: session.id, command: "status", arguments: "world '!`touch pwned`'" })
        expect(userText(model.calls[0]!)).toBe(
          `Dir: ${path.join(root, "project")}\nGreeting: hello world\nBroken: partial\n[\`echo partial; echo oops >&2; exit 3\` exited with code 3: oops]\nNote: !\`touch pwned\``
        )
        expect(fs.existsSync(path.join(root, "project", "pwned"))).toBe(false)
      })))

  it.scopedLive("a shell command that runs too long is stopped and says so", () =>
    withRuntime({
      files: { "project/agent.json": { command: { slow: { template: "Out: !`echo started; sleep 20`" } } } },
      env: { AGENT_COMMAND_SHELL_TIMEOUT_MS: "500" }
    }, () =>
      Effect.gen(function*() {
        const expanded = yield* (yield* CommandRegistry).expand({ command: "slow" })
        expect(textOf(expanded.parts as never)).toBe("Out: started\n[`echo started; sleep 20` did not finish within 500 ms and was stopped]")
      })))

  it.scopedLive("includes @files and @directories as file parts whose content the model reads; @agent becomes an agent part", () =>
    withRuntime({
      files: {
        "project/agent.json": { command: { review: { template: "Review @src/parse.ts against @docs and $ARGUMENTS" } } },
        "project/src/parse.ts": "export const parse = (line: string) => line.split(',')\n",
        "project/docs/spec.md": "# Spec\n",
        "project/docs/notes.md": "notes\n",
        "project/extra.txt": "extra file\n"
      }
    }, ({ model }) =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({})
        yield* (yield* CommandRegistry).execute({ sessionID: session.id, command: "review", arguments: "@extra.txt @missing.ts" })
        const sent = userText(model.calls[0]!)
        expect(sent).toContain("Review @src/parse.ts against @docs and @extra.txt @missing.ts")
        expect(sent).toContain(`<file path="src/parse.ts">\nexport const parse = (line: string) => line.split(',')\n</file>`)
        expect(sent).toContain(`<directory path="docs">\nnotes.md\nspec.md\n</directory>`)
        expect(sent).toContain(`<file path="extra.txt">\nextra file\n</file>`)
        const [user] = yield* store.messages(session.id)
        const files = user!.parts.filter((part): part is Extract<Part, { type: "file" }> => part.type === "file")
        expect(files.map((part) => [part.filename, part.mime])).toEqual([
          ["src/parse.ts", "text/plain"],
          ["docs", "application/x-directory"],
          ["extra.txt", "text/plain"]
        ])
      })))

  it.scopedLive("subtask: true runs the command's agent in a child session with the command's model", () =>
    withRuntime({
      files: {
        "project/agent.json": {
          command: { research: { template: "Find where $1 is parsed", description: "research", agent: "general", subtask: true, model: "test/small" } }
        }
      },
      turns: ["The parent reports: it is in parse.ts."]
    }, ({ model }) =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({ title: "Parent" })
        const outcome = yield* (yield* CommandRegistry).execute({ sessionID: session.id, command: "research", arguments: "CSV" })
        expect(outcome.reason).toBe("completed")
        const [user, step, answer] = yield* store.messages(session.id)
        const subtask = user!.parts.find((part) => part.type === "subtask")
        expect(subtask).toMatchObject({
          type: "subtask",
          agent: "general",
          prompt: "Find where CSV is parsed",
          description: "research",
          command: "research",
          model: { providerID: "test", modelID: "small" }
        })
        // The child ran on the command's model (the small one answers "Test session").
        const [child] = yield* store.children(session.id)
        expect(child!.title).toBe("research (@general subagent)")
        const childMessages = yield* store.messages(child!.id)
        expect(textOf(childMessages[0]!.parts)).toBe("Find where CSV is parsed")
        expect(childMessages[1]!.info).toMatchObject({ role: "assistant", modelID: "small" })
        const task = step!.parts.find((part) => part.type === "tool")!
        expect(task.type === "tool" && task.state.status === "completed" && task.state.output).toContain("Test session")
        // The session's own model then reported, with the subagent's result in front of it.
        expect(model.calls).toHaveLength(1)
        expect(textOf(answer!.parts)).toBe("The parent reports: it is in parse.ts.")
      })))

  it.scopedLive("a command whose agent is a subagent is a subtask unless it says subtask: false", () =>
    withRuntime({
      files: {
        "project/agent.json": {
          command: {
            explore: { template: "Map the repo", agent: "explore" },
            inline: { template: "Map it here", agent: "explore", subtask: false },
            bad: { template: "x", agent: "build", subtask: true }
          }
        }
      }
    }, () =>
      Effect.gen(function*() {
        const commands = yield* CommandRegistry
        expect((yield* commands.expand({ command: "explore" })).subtask).toBe(true)
        const inline = yield* commands.expand({ command: "inline" })
        expect(inline).toMatchObject({ subtask: false, agent: "explore", parts: [{ type: "text", text: "Map it here" }] })
        const error = yield* Effect.flip(commands.expand({ command: "bad" }))
        expect(error.message).toBe(
          `Command "bad": it runs as a subtask, but its agent "build" is a primary agent; name a subagent (mode "subagent" or "all") in its "agent" key`
        )
      })))

  it.scopedLive("a bad model in a command is an error naming the command, and nothing is sent", () =>
    withRuntime({ files: { "project/agent.json": { command: { odd: { template: "x", model: "no-slash" } } } } }, ({ model }) =>
      Effect.gen(function*() {
        const store = yield* SessionStore
        const session = yield* store.create({})
        const error = yield* Effect.flip((yield* CommandRegistry).execute({ sessionID: session.id, command: "odd" }))
        expect(error.message).toBe(`Command "odd": its model must be "provider/model", got "no-slash"`)
        expect(yield* store.messages(session.id)).toEqual([])
        expect(model.calls).toHaveLength(0)
      })))

  it.scopedLive("init asks the agent to write AGENTS.md, which it does with its tools", () =>
    withRuntime({
      files: { "project/package.json": { name: "demo", scripts: { test: "vitest" } } },
      turns: [
        [toolCall("write", { filePath: "AGENTS.md", content: "# demo\n\nRun tests with `npm test`.\n" })],
        "Wrote AGENTS.md."
      ]
    }, ({ model, root }) =>
      Effect.gen(function*() {
        const session = yield* (yield* SessionStore).create({})
        const outcome = yield* (yield* CommandRegistry).execute({ sessionID: session.id, command: "init", arguments: "mention the vitest setup" })
        expect(outcome.reason).toBe("completed")
        const sent = userText(model.calls[0]!)
        expect(sent).toMatch(/^Write the AGENTS.md file for this project/)
        expect(sent).toMatch(/mention the vitest setup$/)
        expect(fs.readFileSync(path.join(root, "project", "AGENTS.md"), "utf8")).toBe("# demo\n\nRun tests with `npm test`.\n")
      })))
})
