import {
  type Agent,
  type AgentNotFound,
  CommandError,
  type CommandInfo,
  CommandNotFound,
  type MessageID,
  type ModelRef,
  parseModelRef,
  type SessionID
} from "@agent/domain"
import { Context, Effect, Layer } from "effect"
import { AgentRegistry } from "../agent/AgentRegistry.js"
import * as Identifier from "../runtime/Identifier.js"
import * as Prompts from "../runtime/Prompts.js"
import { Bus } from "../runtime/Bus.js"
import { Instance } from "../runtime/Instance.js"
import * as CommandTemplate from "./CommandTemplate.js"
import type { ConfigInfo } from "../config/ConfigInfo.js"
import { ConfigService } from "../config/ConfigService.js"
import { Mcp, type McpPrompt } from "../mcp/Mcp.js"
import { Sandbox } from "../sandbox/Sandbox.js"
import { type LoopError, type PromptInput, type PromptPartInput, type RunOutcome, SessionLoop } from "./SessionLoop.js"

/** What running a command needs besides the session. */
export interface ExpandCommandInput {
  readonly command: string
  /** Everything the user typed after the command name. */
  readonly arguments?: string
  /** The session's agent for this message (a subtask command's subagent is its own). */
  readonly agent?: string
  /** The model for this message, as a reference or `provider/model`. */
  readonly model?: ModelRef | string
  /**
   * Asked before a file that `@path` in the arguments names is read (the template's own references
   * are the user's): a text refuses the command with it (`CommandError` with `forbidden`). The
   * server passes its file-part check here; a person at the CLI reads what they name.
   */
  readonly mayRead?: (absolute: string, kind: "file" | "directory") => string | undefined
  /**
   * Asked before a shell piece (`` !`cmd $ARGUMENTS` ``) whose text the arguments changed runs:
   * a text refuses the command with it. The server passes its bash-rule check here, since the
   * arguments then come from a client, not from the person who wrote the template.
   */
  readonly mayRun?: (command: string) => Effect.Effect<string | undefined>
}

/** A command turned into the prompt it sends. */
export interface ExpandedCommand {
  readonly command: CommandInfo
  /** The parts of the user message. */
  readonly parts: ReadonlyArray<PromptPartInput>
  /** The agent and model of the user message (undefined: the session's). */
  readonly agent?: string
  readonly model?: ModelRef
  /** The command runs as a subagent in a child session (a subtask part). */
  readonly subtask: boolean
}

export interface ExecuteCommandInput extends ExpandCommandInput {
  readonly sessionID: SessionID
  readonly messageID?: MessageID
  /** More parts after the command's own (attachments); not passed to a subtask. */
  readonly parts?: ReadonlyArray<PromptPartInput>
  readonly autoApprove?: boolean
  readonly maxSteps?: number
  readonly tools?: Record<string, boolean>
  /** One of the model's `variants` for this message. */
  readonly variant?: string
}

/** How the command's run ended, and the id of the user message it sent. */
export interface CommandOutcome extends RunOutcome {
  readonly messageID: MessageID
}

/** The prompt an expanded command sends (a replica sends it to the session's owner). */
export const commandPrompt = (
  expanded: ExpandedCommand,
  input: ExecuteCommandInput,
  messageID: MessageID
): PromptInput & { readonly messageID: MessageID } => ({
  sessionID: input.sessionID,
  messageID,
  parts: expanded.subtask ? expanded.parts : [...expanded.parts, ...(input.parts ?? [])],
  ...(expanded.agent ? { agent: expanded.agent } : {}),
  ...(expanded.model ? { model: expanded.model } : {}),
  ...(input.autoApprove !== undefined ? { autoApprove: input.autoApprove } : {}),
  ...(input.maxSteps !== undefined ? { maxSteps: input.maxSteps } : {}),
  ...(input.variant !== undefined ? { variant: input.variant } : {}),
  ...(input.tools ? { tools: input.tools } : {})
})

export type CommandExpandError = CommandNotFound | CommandError | AgentNotFound

export interface CommandRegistryShape {
  /** Built-in and configured commands by name, then the prompts of connected MCP servers. */
  readonly list: () => Effect.Effect<ReadonlyArray<CommandInfo>>
  readonly get: (name: string) => Effect.Effect<CommandInfo, CommandNotFound>
  /** Fills in the arguments, shell output and files: the message the command would send. */
  readonly expand: (input: ExpandCommandInput) => Effect.Effect<ExpandedCommand, CommandExpandError>
  /** Sends the command's message to the session and runs it; publishes `command.executed`. */
  readonly execute: (input: ExecuteCommandInput) => Effect.Effect<CommandOutcome, CommandExpandError | LoopError>
}

/**
 * The commands a user can run on a session: the built-in `init`, `command.<name>` from the
 * config (JSON or markdown files in `command(s)/`), and the prompts of MCP servers as
 * `<server>:<prompt>`.
 */
export class CommandRegistry extends Context.Tag("@agent/core/CommandRegistry")<CommandRegistry, CommandRegistryShape>() {
  static readonly layer: Layer.Layer<
    CommandRegistry,
    never,
    ConfigService | Instance | AgentRegistry | Mcp | Bus | SessionLoop | Sandbox
  > = Layer.effect(CommandRegistry, make())
}

const builtIns = (): ReadonlyArray<CommandInfo> => {
  const init = Prompts.read("command/init.txt")
  return [
    {
      name: "init",
      description: "create or improve AGENTS.md for this project",
      source: "builtin",
      template: init,
      hints: CommandTemplate.hints(init)
    }
  ]
}

const mcpCommand = (prompt: McpPrompt): CommandInfo => ({
  name: prompt.key,
  ...(prompt.description ? { description: prompt.description } : {}),
  source: "mcp",
  hints: prompt.arguments.map((argument) => argument.name)
})

const ordinal = (n: number) => `${n}${n % 10 === 1 && n !== 11 ? "st" : n % 10 === 2 && n !== 12 ? "nd" : n % 10 === 3 && n !== 13 ? "rd" : "th"}`

/** The built-in commands and `command.<name>` of the config, by name. */
const configuredCommands = (info: ConfigInfo): Map<string, CommandInfo> => {
  const configured = new Map<string, CommandInfo>()
  for (const command of builtIns()) configured.set(command.name, command)
  for (const [name, entry] of Object.entries(info.config.command ?? {})) {
    const file = info.origin(["command", name])?.file
    configured.set(name, {
      name,
      ...(entry.description !== undefined ? { description: entry.description } : {}),
      ...(entry.agent !== undefined ? { agent: entry.agent } : {}),
      ...(entry.model !== undefined ? { model: entry.model } : {}),
      ...(entry.subtask !== undefined ? { subtask: entry.subtask } : {}),
      source: "config",
      template: entry.template,
      hints: CommandTemplate.hints(entry.template),
      ...(file ? { file } : {})
    })
  }
  return configured
}

const parseModel = (command: string, value: string, what: string) => {
  const ref = parseModelRef(value)
  return ref
    ? Effect.succeed(ref)
    : Effect.fail(new CommandError({ command, detail: `${what} must be "provider/model", got "${value}"` }))
}

/** An MCP prompt, rendered by its server with the words mapped onto its arguments in order. */
const expandMcp = (mcp: Mcp["Type"], command: CommandInfo, prompt: McpPrompt, input: ExpandCommandInput) =>
  Effect.gen(function*() {
    const words = CommandTemplate.parseArguments(input.arguments ?? "")
    const names = prompt.arguments.map((argument) => argument.name)
    if (words.length > 0 && names.length === 0) {
      return yield* new CommandError({ command: command.name, detail: "this MCP prompt takes no arguments" })
    }
    const args: Record<string, string> = {}
    names.forEach((name, index) => {
      if (index >= words.length) return
      // The last argument takes the rest of the words, as `$N` does in a template.
      args[name] = index === names.length - 1 ? words.slice(index).join(" ") : words[index]!
    })
    const missing = prompt.arguments.flatMap((argument, index) =>
      argument.required && args[argument.name] === undefined ? [`${argument.name} (${ordinal(index + 1)})`] : []
    )
    if (missing.length > 0) {
      const usage = prompt.arguments.map((argument) => (argument.required ? argument.name : `[${argument.name}]`)).join(" ")
      return yield* new CommandError({
        command: command.name,
        detail: `missing required argument${missing.length > 1 ? "s" : ""} ${missing.join(", ")}; usage: ${command.name} ${usage}`
      })
    }
    const rendered = yield* mcp.getPrompt(prompt.key, args).pipe(
      Effect.mapError((error) => new CommandError({ command: command.name, detail: error.message }))
    )
    // The server's text is sent as it is: no shell, no file inclusion from a remote party.
    const text = rendered.messages.map((message) => message.text).join("\n\n").trim()
    if (!text) return yield* new CommandError({ command: command.name, detail: "the MCP server rendered an empty prompt" })
    const model = input.model === undefined
      ? undefined
      : typeof input.model === "string"
      ? yield* parseModel(command.name, input.model, "the model")
      : input.model
    return {
      command,
      parts: [{ type: "text", text }],
      ...(input.agent ? { agent: input.agent } : {}),
      ...(model ? { model } : {}),
      subtask: false
    } satisfies ExpandedCommand
  })

/** The message of an expanded template: in this session, or as a subtask for the command's subagent. */
const commandMessage = (options: {
  readonly command: CommandInfo
  readonly agent: Agent
  readonly agentName: string | undefined
  readonly commandAgent: Agent | undefined
  readonly commandModel: ModelRef | undefined
  readonly inputModel: ModelRef | undefined
  readonly input: ExpandCommandInput
  readonly text: string
  readonly inclusions: ReadonlyArray<CommandTemplate.Inclusion>
}) =>
  Effect.gen(function*() {
    const { command, agent, agentName, commandAgent, commandModel, inputModel, input, text, inclusions } = options
    const files = inclusions.filter((inclusion) => inclusion.type === "file")
    const subtask = command.subtask === true || (agent.mode === "subagent" && command.subtask !== false)
    if (subtask) {
      if (agent.mode === "primary" || agent.hidden) {
        return yield* new CommandError({
          command: command.name,
          detail: `it runs as a subtask, but its agent "${agent.name}" is ${agent.hidden ? "hidden" : "a primary agent"}; ` +
            `name a subagent (mode "subagent" or "all") in its "agent" key`
        })
      }
      const prompt = [text, ...files.flatMap((file) => (file.text === undefined ? [] : [CommandTemplate.inclusionText(file)]))].join("\n\n")
      const note = Prompts.read("command/subtask.txt").replace("{command}", command.name).replace("{agent}", agent.name)
      const model = commandModel ?? commandAgent?.model
      return {
        command,
        parts: [
          { type: "text", text: note, synthetic: true },
          {
            type: "subtask",
            prompt,
            description: command.description ?? `/${command.name}`,
            agent: agent.name,
            command: command.name,
            ...(model ? { model } : {})
          }
        ],
        ...(input.agent ? { agent: input.agent } : {}),
        ...(inputModel ? { model: inputModel } : {}),
        subtask: true
      } satisfies ExpandedCommand
    }

    const parts: Array<PromptPartInput> = [{ type: "text", text }]
    for (const inclusion of inclusions) {
      if (inclusion.type === "agent") {
        parts.push({ type: "agent", name: inclusion.name })
        continue
      }
      parts.push({ type: "file", mime: inclusion.mime, url: inclusion.url, filename: inclusion.display })
      if (inclusion.text !== undefined) parts.push({ type: "text", text: CommandTemplate.inclusionText(inclusion), synthetic: true })
    }
    const model = commandModel ?? commandAgent?.model ?? inputModel
    return {
      command,
      parts,
      // No agent named: the session goes on with its own.
      ...(agentName ? { agent: agentName } : {}),
      ...(model ? { model } : {}),
      subtask: false
    } satisfies ExpandedCommand
  })

function make() {
  return Effect.gen(function*() {
    const info = yield* (yield* ConfigService).info()
    const instance = yield* Instance
    const agents = yield* AgentRegistry
    const mcp = yield* Mcp
    const bus = yield* Bus
    const loop = yield* SessionLoop
    const sandbox = yield* Sandbox

    const configured = configuredCommands(info)
    const staticCommands = [...configured.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    const shellTimeout = CommandTemplate.shellTimeout(instance)

    const mcpPrompts = (wait: boolean) =>
      Effect.gen(function*() {
        // Servers connect in the background; give them the usual grace before answering.
        if (wait) yield* mcp.ready()
        return yield* mcp.prompts()
      })

    const list = Effect.fn("CommandRegistry.list")(function*() {
      const prompts = yield* mcpPrompts(true)
      const all = [...staticCommands]
      for (const prompt of prompts) if (!configured.has(prompt.key)) all.push(mcpCommand(prompt))
      return all as ReadonlyArray<CommandInfo>
    })

    const find = (name: string) =>
      Effect.gen(function*() {
        const known = configured.get(name)
        if (known) return { command: known, prompt: undefined }
        // MCP prompts are named `<server>:<prompt>`; only then is it worth waiting for the servers.
        const prompt = (yield* mcpPrompts(name.includes(":"))).find((candidate) => candidate.key === name)
        if (prompt) return { command: mcpCommand(prompt), prompt }
        const available = [...staticCommands.map((command) => command.name), ...(yield* mcp.prompts()).map((p) => p.key)]
        return yield* new CommandNotFound({ name, available })
      })

    const get = Effect.fn("CommandRegistry.get")(function*(name: string) {
      return (yield* find(name)).command
    })

    const expand = Effect.fn("CommandRegistry.expand")(function*(input: ExpandCommandInput) {
      const { command, prompt } = yield* find(input.command)
      if (prompt) return yield* expandMcp(mcp, command, prompt, input)
      const template = command.template ?? ""
      const raw = input.arguments ?? ""

      const commandAgent = command.agent === undefined ? undefined : yield* agents.get(command.agent)
      const agentName = command.agent ?? input.agent
      const agent = agentName === undefined ? yield* agents.defaultAgent().pipe(Effect.orDie) : yield* agents.get(agentName)
      // `` !`command` `` runs in the sandbox of the agent the command runs as.
      const where = { sandbox, plan: yield* sandbox.plan(agent.sandbox) }

      // Arguments go into each piece; shell pieces run in order (one may depend on another).
      const fill = CommandTemplate.argumentFill(template, raw)
      const pieces = CommandTemplate.segments(template)
      let text = ""
      let typed = ""
      for (const piece of pieces) {
        if (piece.type === "text") {
          const filled = CommandTemplate.fillArguments(piece.text, fill)
          text += filled
          typed += filled
        } else {
          const shell = CommandTemplate.fillArguments(piece.command, fill)
          const refusal = input.mayRun && shell !== piece.command ? yield* input.mayRun(shell) : undefined
          if (refusal) return yield* new CommandError({ command: command.name, detail: refusal, forbidden: true })
          text += yield* CommandTemplate.runShell(instance, shell, shellTimeout, where)
          typed += " "
        }
      }
      // A template that takes no arguments still gets what the user typed.
      if (CommandTemplate.hints(template).length === 0 && fill.raw) {
        text += `\n\n${fill.raw}`
        typed += `\n\n${fill.raw}`
      }
      text = text.trim()
      if (!text) return yield* new CommandError({ command: command.name, detail: "the template expanded to an empty message" })

      const commandModel = command.model === undefined ? undefined : yield* parseModel(command.name, command.model, "its model")
      const inputModel = input.model === undefined
        ? undefined
        : typeof input.model === "string"
        ? yield* parseModel(command.name, input.model, "the model")
        : input.model

      // Files named in the template or the arguments (never in shell output) are read into the message.
      const knownAgents = new Set((yield* agents.list()).map((candidate) => candidate.name))
      if (input.mayRead) {
        const own = new Set(CommandTemplate.fileReferences(template))
        for (const ref of CommandTemplate.fileReferences(typed)) {
          const target = own.has(ref) ? undefined : CommandTemplate.referenceTarget(instance, ref)
          const refusal = target && input.mayRead(target.absolute, target.kind)
          if (refusal) return yield* new CommandError({ command: command.name, detail: `@${ref}: ${refusal}`, forbidden: true })
        }
      }
      const inclusions = CommandTemplate.fileReferences(typed).flatMap((ref) => {
        const found = CommandTemplate.resolveReference(instance, ref, (name) => knownAgents.has(name))
        return found ? [found] : []
      })
      return yield* commandMessage({ command, agent, agentName, commandAgent, commandModel, inputModel, input, text, inclusions })
    })

    const execute = Effect.fn("CommandRegistry.execute")(function*(input: ExecuteCommandInput) {
      const expanded = yield* expand(input)
      const messageID = input.messageID ?? (Identifier.ascending("message") as MessageID)
      const outcome = yield* loop.prompt(commandPrompt(expanded, input, messageID))
      yield* bus.publish({
        type: "command.executed",
        properties: { name: expanded.command.name, sessionID: input.sessionID, arguments: input.arguments ?? "", messageID }
      })
      return { ...outcome, messageID } satisfies CommandOutcome
    })

    return { list, get, expand, execute } satisfies CommandRegistryShape
  })
}
