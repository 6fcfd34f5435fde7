import { DemoScript } from "@agent/core"
import type { LanguageModelV3Prompt } from "@ai-sdk/provider"
import { describe, expect, it } from "@effect/vitest"

const { demoEdit, frontPage, nextStep, readLines, searchWord, topLevel, NOTE } = DemoScript

const TOOLS = ["read", "grep", "edit", "todowrite", "bash"]

const listing = (root: string, entries: ReadonlyArray<string>) =>
  [`<path>${root}</path>`, "<type>directory</type>", "<entries>", ...entries, `(${entries.length} entries)`, "</entries>"].join("\n")

const fileOutput = (file: string, lines: ReadonlyArray<string>) =>
  [`<path>${file}</path>`, "<type>file</type>", "<content>", ...lines.map((line, index) => `${index + 1}: ${line}`), "", `(End of file - total ${lines.length} lines)`, "</content>"].join("\n")

/** Plays the script against canned tool results: what it asks for at each step. */
const play = (results: (name: string, input: Record<string, unknown>) => { ok: boolean; text: string }, tools = TOOLS) => {
  const prompt: Array<LanguageModelV3Prompt[number]> = [{ role: "system", content: "..." }, { role: "user", content: [{ type: "text", text: "what is this?" }] }]
  const steps: Array<DemoScript.DemoStep> = []
  for (let n = 0; n < 10; n++) {
    const step = nextStep(prompt, tools)
    steps.push(step)
    if (step.calls.length === 0) break
    prompt.push({ role: "assistant", content: step.calls.map((call, index) => ({ type: "tool-call", toolCallId: `${n}_${index}`, toolName: call.name, input: JSON.stringify(call.input) })) })
    prompt.push({
      role: "tool",
      content: step.calls.map((call, index) => {
        const { ok, text } = results(call.name, call.input)
        return { type: "tool-result", toolCallId: `${n}_${index}`, toolName: call.name, output: ok ? { type: "text", value: text } : { type: "error-text", value: text } }
      })
    })
  }
  return steps
}

describe("DemoScript", () => {
  it("reads the top level from read's directory listing", () => {
    expect(topLevel(listing("/tmp/x/shop", ["README.md", "package.json", "src/"]))).toEqual({
      name: "shop",
      files: ["README.md", "package.json"],
      directories: ["src/"]
    })
  })

  it("opens a README first, then a manifest, then any text file", () => {
    expect(frontPage(["package.json", "readme.md", "a.ts"])).toBe("readme.md")
    expect(frontPage(["Cargo.toml", "main.rs"])).toBe("Cargo.toml")
    expect(frontPage(["logo.png", "notes.txt"])).toBe("notes.txt")
    expect(frontPage(["logo.png"])).toBeUndefined()
  })

  it("searches for the first real word of the file", () => {
    expect(searchWord(readLines(fileOutput("/x/README.md", ["", "# My-Shop", "text"])))).toBe("Shop")
    expect(searchWord(["{", "}"])).toBe("TODO")
  })

  it("edits after a line that occurs once, with the file's comment syntax, else writes a notes file", () => {
    // "# Shop" is part of "# Shop again": only the second is unique in the file.
    expect(demoEdit("README.md", ["# Shop", "", "# Shop again"])).toEqual({ filePath: "README.md", oldString: "# Shop again", newString: `# Shop again\n\n${NOTE}` })
    expect(demoEdit("main.py", ["import os", "import os.path"])).toEqual({ filePath: "main.py", oldString: "import os.path", newString: `import os.path\n# ${NOTE}` })
    expect(demoEdit("package.json", ["{", "}"])).toMatchObject({ filePath: "DEMO-NOTES.md", oldString: "" })
    expect(demoEdit(undefined, [])).toMatchObject({ filePath: "DEMO-NOTES.md" })
  })

  it("a whole run: plan and listing, the README, a grep, an edit, the todos done, an answer built from what it found", () => {
    const steps = play((name, input) => {
      if (name === "read" && input["filePath"] === ".") return { ok: true, text: listing("/tmp/d/shop", ["README.md", "src/"]) }
      if (name === "read") return { ok: true, text: fileOutput("/tmp/d/shop/README.md", ["# Shop", "", "Sells things."]) }
      if (name === "grep") return { ok: true, text: "Found 3 matches\n..." }
      return { ok: true, text: "done" }
    })
    expect(steps.map((step) => step.calls.map((call) => call.name).join("+"))).toEqual(["todowrite+read", "read", "grep", "edit", "todowrite", ""])
    expect(steps[1]!.calls[0]!.input).toEqual({ filePath: "README.md" })
    expect(steps[2]!.calls[0]!.input).toEqual({ pattern: "Shop" })
    const answer = steps.at(-1)!.text!
    expect(answer).toContain("Here is what I found in shop")
    expect(answer).toContain("1 directory and 1 file at its top level: README.md")
    expect(answer).toContain('README.md begins with "# Shop"')
    expect(answer).toContain('Searching for "Shop": Found 3 matches')
    expect(answer).toContain('You asked: "what is this?"')
  })

  it("an empty project, a refused edit and missing tools still end in an answer that says so", () => {
    const steps = play((name) =>
      name === "read" ? { ok: true, text: listing("/tmp/d/empty", []) } : name === "edit" ? { ok: false, text: "The user rejected this" } : { ok: true, text: "No files found" }
    )
    expect(steps.map((step) => step.calls.map((call) => call.name).join("+"))).toEqual(["todowrite+read", "grep", "edit", "todowrite", ""])
    expect(steps.at(-1)!.text).toContain("There was no text file at the top level to read.")
    expect(steps.at(-1)!.text).toContain("The edit of DEMO-NOTES.md did not happen: The user rejected this.")
    const readOnly = play(() => ({ ok: true, text: listing("/tmp/d/x", ["a.md"]) }), ["read", "grep"])
    expect(readOnly.map((step) => step.calls.map((call) => call.name).join("+"))).toEqual(["read", "read", "grep", ""])
    expect(readOnly.at(-1)!.text).toContain("I made no edit")
  })

  it("a call offering no tools (a title) gets a short text", () => {
    expect(nextStep([{ role: "user", content: [{ type: "text", text: "hi" }] }], [])).toEqual({ text: "A look around the project (demo)", calls: [] })
  })
})
