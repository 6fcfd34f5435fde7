import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { lazy } from "./Lazy.js"
import { format } from "./Options.js"

const load = () => import("./Session.js")
const id = Args.text({ name: "id" }).pipe(Args.withDescription("session id (ses_...)"))

const list = Command.make(
  "list",
  {
    limit: Options.integer("limit").pipe(Options.withAlias("n"), Options.withDescription("at most this many sessions"), Options.withDefault(50)),
    search: Options.text("search").pipe(Options.withDescription("only sessions whose title contains this text"), Options.optional),
    format
  },
  (input) => lazy(load, (module) => module.list(input))
).pipe(Command.withDescription("List this project's sessions (not subagent sessions), newest first"))

const show = Command.make(
  "show",
  {
    id,
    diff: Options.boolean("diff").pipe(Options.withDescription("also print the unified diff of each file the session changed")),
    format
  },
  (input) => lazy(load, (module) => module.show(input))
).pipe(
  Command.withDescription(
    "Show a session: title, agent, model, tokens and cost, the files it changed (subagent sessions included) and the conversation"
  )
)

const exportCommand = Command.make(
  "export",
  { id, file: Args.text({ name: "file" }).pipe(Args.withDescription("where to write (default: stdout)"), Args.optional) },
  (input) => lazy(load, (module) => module.exportSession(input))
).pipe(Command.withDescription("Export a session and its subagent sessions as JSON"))

const importCommand = Command.make(
  "import",
  { file: Args.text({ name: "file" }).pipe(Args.withDescription("an exported session, or - for stdin")) },
  (input) => lazy(load, (module) => module.importSession(input))
).pipe(Command.withDescription("Import a session exported with `agent session export`"))

const deleteCommand = Command.make("delete", { id }, (input) => lazy(load, (module) => module.remove(input))).pipe(
  Command.withDescription("Delete a session with its subagent sessions")
)

const revert = Command.make(
  "revert",
  {
    id,
    message: Args.text({ name: "message" }).pipe(Args.withDescription("the first message to undo (msg_...); it and later ones are hidden")),
    part: Options.text("part").pipe(Options.withDescription("undo from this part of the message on (prt_...)"), Options.optional)
  },
  (input) => lazy(() => import("./SessionRevert.js"), (module) => module.revert(input))
).pipe(Command.withDescription("Undo the files a session changed from a message on (files changed since by someone else are left alone and listed)"))

const unrevert = Command.make("unrevert", { id }, (input) => lazy(() => import("./SessionRevert.js"), (module) => module.unrevert(input))).pipe(
  Command.withDescription("Put back what the last revert undid")
)

export const session = Command.make("session").pipe(
  Command.withDescription("List, show, export, import, delete, revert and unrevert sessions"),
  Command.withSubcommands([list, show, exportCommand, importCommand, deleteCommand, revert, unrevert])
)
