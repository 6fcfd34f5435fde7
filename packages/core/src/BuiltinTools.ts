import { Effect } from "effect"
import type { AnyTool } from "./Tool.js"
import * as ApplyPatch from "./tools/ApplyPatch.js"
import * as Bash from "./tools/Bash.js"
import * as Edit from "./tools/Edit.js"
import * as Read from "./tools/Read.js"
import * as Skill from "./tools/Skill.js"
import * as Write from "./tools/Write.js"

/**
 * The built-in tools, in the order the model sees them (OpenCode's order; `task` is added
 * by the session loop, `invalid` by the registry).
 */
export const make = Effect.all([Bash.make, Read.make, Edit.make, Write.make, Skill.make, ApplyPatch.make]).pipe(
  Effect.map((tools): ReadonlyArray<AnyTool> => tools)
)
