import { Effect, Layer } from "effect"
import { type AnyTool } from "../tool/Tool.js"
import { ToolRegistry } from "../tool/ToolRegistry.js"
import * as ApplyPatch from "./ApplyPatch.js"
import * as Bash from "./Bash.js"
import * as CustomTools from "./CustomTools.js"
import * as Edit from "./Edit.js"
import * as Glob from "./Glob.js"
import * as Grep from "./Grep.js"
import * as List from "./List.js"
import * as Question from "./Question.js"
import * as Read from "./Read.js"
import * as Skill from "./Skill.js"
import * as Todo from "./Todo.js"
import * as WebFetch from "./WebFetch.js"
import * as Write from "./Write.js"

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
