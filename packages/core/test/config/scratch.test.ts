import { it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { loadConfig } from "../../src/ConfigService.js"
import { makeSandbox } from "./helpers.js"

it.live("scratch", () => Effect.gen(function*() {
  const box = makeSandbox()
  const cases: Array<[string, string]> = [
    [".opencode/agent/bad.md", "---\ndescription: ok\ntools:\n  write: [false\n---\nBody\n"],
    ["agent.json", `{"mcp": {"x": {"type": "local"}}}`],
    ["agent.json", `{"mcp": {"x": {"type": "local", "command": ["a"], "foo": 1}}}`],
    ["agent.json", `{"agent": {"x": {"color": "blue"}}}`],
    ["agent.json", `{"provider": {"p": {"models": {"m": {"limit": {"output": 5}}}}}}`],
    ["agent.json", `{"share": "always"}`],
    ["agent.json", `{"agent": "x"}`],
    ["agent.json", `{"instructions": "x"}`],
    ["agent.json", `{"tools": {"bash": "yes"}}`],
    ["agent.json", `{"mode": {"x": 5}}`],
  ]
  for (const [rel, text] of cases) {
    const file = box.write(path.join(box.project, rel), text)
    const r = yield* Effect.either(loadConfig(box.instance()))
    console.log(r._tag === "Left" ? r.left.message : JSON.stringify(r.right.config))
    require("node:fs").rmSync(file)
  }
}))
