import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agent, terminal } from "./AgentProcess.js"

/** @effect/cli's placeholders for an argument or option that says nothing about itself. */
const GENERIC = [/A user-defined piece of text/, /A true or false value/, /An integer\./, /One of the following:/]

const ESCAPE = /\x1b\[/

/** Every command path the top-level help lists (`run`, `session export`, ...). */
const commandPaths = (help: string) =>
  help
    .slice(help.indexOf("COMMANDS"))
    .split("\n")
    .flatMap((line) => {
      const match = /^\s+- (.*)$/.exec(line)
      if (!match) return []
      const words: Array<string> = []
      // `name [flags] <args>   description`: the words before the first flag or argument.
      for (const word of match[1]!.split(/\s{2,}/)[0]!.trim().split(/\s+/)) {
        if (/^[[<(-]/.test(word)) break
        words.push(word)
      }
      return [words]
    })

describe("--help", () => {
  it.scopedLive("every command's help, piped: plain text, `agent …` usage lines, a real description for every argument", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const top = yield* agent(box, ["--help"])
      expect(top.code, top.stderr).toBe(0)
      const paths = commandPaths(top.stdout)
      expect(paths.map((words) => words.join(" "))).toEqual(expect.arrayContaining(["run", "serve", "session export", "debug agent", "completion"]))
      const helps = yield* Effect.forEach(paths, (words) => Effect.map(agent(box, [...words, "--help"]), (result) => ({ words, result })), {
        concurrency: 4
      })
      for (const { result, words } of [{ words: [] as Array<string>, result: top }, ...helps]) {
        const name = ["agent", ...words].join(" ")
        expect(result.code, `${name}: ${result.stderr}`).toBe(0)
        expect(result.stdout, name).not.toMatch(ESCAPE)
        for (const generic of GENERIC) expect(result.stdout, name).not.toMatch(generic)
        expect(result.stdout, name).toMatch(new RegExp(`^\\$ ${name.replace(/ /g, "\\s")}(\\s|$)`, "m"))
      }
    }), 120_000)

  it.scopedLive("NO_COLOR and a dumb terminal get no colour; a colour terminal gets it", () =>
    Effect.gen(function*() {
      const box = yield* TestInstance.sandbox()
      const colored = yield* terminal(box, ["run", "--help"], { TERM: "xterm-256color" })
      expect(yield* colored.exited).toBe(0)
      expect(colored.raw()).toMatch(ESCAPE)
      const noColor = yield* terminal(box, ["run", "--help"], { TERM: "xterm-256color", NO_COLOR: "1" })
      expect(yield* noColor.exited).toBe(0)
      expect(noColor.screen()).toMatch(/\$ agent run/)
      expect(noColor.raw()).not.toMatch(ESCAPE)
    }))
})
