import { TestInstance } from "@agent/testing"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import * as FileSearch from "../../src/tool/FileSearch.js"
import { withoutRipgrep, withRipgrep } from "./ripgrep.js"

/**
 * A sandbox and two views of its instance: one whose PATH has ripgrep and one whose PATH has not,
 * checked to pick those engines.
 */
export const sandboxWithAndWithoutRipgrep = Effect.gen(function*() {
  const box = yield* TestInstance.sandbox({ env: { PATH: withRipgrep(process.env.PATH) } })
  const withRg = box.instance
  const withoutRg = { ...withRg, env: { ...withRg.env, PATH: withoutRipgrep(process.env.PATH) } }
  expect(FileSearch.make(withRg).engine).toBe("ripgrep")
  expect(FileSearch.make(withoutRg).engine).toBe("builtin")
  return { box, withRg, withoutRg }
})
