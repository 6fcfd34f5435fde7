import { it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { discover } from "../src/Skills.js"

it.live("bench", () => Effect.gen(function*() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "bench-"))
  for (let i = 0; i < 200; i++) {
    const d = path.join(root, "skills", `g${i % 7}`, `s${i}`)
    fs.mkdirSync(path.join(d, "scripts"), { recursive: true })
    fs.writeFileSync(path.join(d, "SKILL.md"), `---\nname: s${i}\ndescription: d\n---\nbody`)
    fs.writeFileSync(path.join(d, "scripts", "run.sh"), "x")
  }
  for (let k = 0; k < 3; k++) {
    const t = performance.now()
    const r = yield* discover([{ dir: path.join(root, "skills"), depth: "recursive" }])
    console.log(r.skills.length, (performance.now() - t).toFixed(1))
  }
  const t = performance.now()
  yield* Effect.promise(async () => { for (let i = 0; i < 200; i++) await fs.promises.readFile(path.join(root, "skills", `g${i % 7}`, `s${i}`, "SKILL.md"), "utf8") })
  console.log("raw reads", (performance.now() - t).toFixed(1))
}))
