// Real hook scripts for the hook tests, written into the test's sandbox: each logs the JSON it was
// given (one line per run) to a file the test reads, then answers as the test says.
import type { TestInstance } from "@agent/testing"
import * as fs from "node:fs"

/** A shell hook: logs its stdin and environment, then runs `body` (its answer). */
export const shellHook = (box: TestInstance.Sandbox, name: string, body: string): string => {
  const file = box.path(`home/hooks/${name}.sh`)
  const log = box.path(`home/hooks/${name}.log`)
  fs.mkdirSync(box.path("home/hooks"), { recursive: true })
  fs.writeFileSync(
    file,
    `#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' "$input" >> '${log}'\nprintf '%s\\n' "$CLAUDE_PROJECT_DIR|$AGENT_PROJECT_DIR" > '${log}.env'\n${body}\n`,
    { mode: 0o755 }
  )
  return file
}

/** A Python hook: `answer(data)` is Python code over the decoded input `data`; it logs its input like the shell one. */
export const pythonHook = (box: TestInstance.Sandbox, name: string, answer: string): string => {
  const file = box.path(`home/hooks/${name}.py`)
  const log = box.path(`home/hooks/${name}.log`)
  fs.mkdirSync(box.path("home/hooks"), { recursive: true })
  fs.writeFileSync(
    file,
    [
      "#!/usr/bin/env python3",
      "import json, sys",
      "data = json.load(sys.stdin)",
      `with open(${JSON.stringify(log)}, "a") as log: log.write(json.dumps(data) + "\\n")`,
      answer,
      ""
    ].join("\n"),
    { mode: 0o755 }
  )
  return `python3 ${file}`
}

/** The inputs a hook was run with, in order. */
export const runsOf = (box: TestInstance.Sandbox, name: string): Array<Record<string, any>> => {
  const log = box.path(`home/hooks/${name}.log`)
  if (!fs.existsSync(log)) return []
  return fs.readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line))
}

/** `hooks` for one event: `[{matcher, hooks: [{type: "command", command}]}]`. */
export const on = (event: string, command: string, matcher?: string, extra: object = {}) => ({
  [event]: [{ ...(matcher === undefined ? {} : { matcher }), hooks: [{ type: "command", command, ...extra }] }]
})
