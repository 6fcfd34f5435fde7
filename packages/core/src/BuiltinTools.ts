import { Effect, Layer } from "effect"
import type { AnyTool } from "./Tool.js"
import { ToolRegistry } from "./ToolRegistry.js"
import * as ApplyPatch from "./tools/ApplyPatch.js"
import * as Bash from "./tools/Bash.js"
import * as CustomTools from "./tools/CustomTools.js"
import * as Edit from "./tools/Edit.js"
import * as Glob from "./tools/Glob.js"
import * as Grep from "./tools/Grep.js"
import * as List from "./tools/List.js"
import * as Question from "./tools/Question.js"
import * as Read from "./tools/Read.js"
import * as Skill from "./tools/Skill.js"
import * as Todo from "./tools/Todo.js"
import * as WebFetch from "./tools/WebFetch.js"
import * as Write from "./tools/Write.js"

/**
 * The built-in tools, in the order the model sees them (OpenCode's order; `task` is added
 * by the session loop, `invalid` by the registry), then the user's custom tools.
 */
export const make = Effect.all([
  Question.make,
  Bash.make,
  Read.make,
  Glob.make,
  Grep.make,
  List.make,
  Edit.make,
  Write.make,
  WebFetch.make,
  Todo.makeWrite,
  Todo.makeRead,
  Skill.make,
  ApplyPatch.make
]).pipe(
  Effect.zipWith(CustomTools.load, (builtins, custom): ReadonlyArray<AnyTool> => [...builtins, ...custom])
)

/** The tool registry: the built-in tools followed by `extra` (custom tools, test tools). */
export const layer = (extra: ReadonlyArray<AnyTool> = []) =>
  Layer.unwrapEffect(Effect.map(make, (builtins) => ToolRegistry.make([...builtins, ...extra])))
