import type { AgentMode, ModelRef } from "@agent/domain"
import { Context, Effect, Either, JSONSchema, Layer, ParseResult, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { stringify as toYaml } from "yaml"
import { AgentRegistry } from "./AgentRegistry.js"
import { isEnvFlag } from "../config/ConfigFiles.js"
import { loadConfig } from "../config/ConfigService.js"
import * as Prompts from "../runtime/Prompts.js"
import { Instance } from "../runtime/Instance.js"
import { LLMService } from "../llm/LLMService.js"
import { type ModelNotConfigured, ProviderRegistry } from "../llm/ProviderRegistry.js"

/** What the model answers: OpenCode's three fields. */
export const GeneratedAgent = Schema.Struct({
  identifier: Schema.String.annotations({
    description: "Short name: lowercase letters, digits and hyphens, two to four words"
  }),
  whenToUse: Schema.String.annotations({
    description: "When another agent should hand work to this one, starting with \"Use this agent when\""
  }),
  systemPrompt: Schema.String.annotations({ description: "The agent's instructions, in the second person" })
})
export type GeneratedAgent = typeof GeneratedAgent.Type

/** The tools a generated agent may be limited to, and the permission each one is asked under. */
export const AGENT_TOOLS: Readonly<Record<string, string>> = {
  bash: "bash",
  read: "read",
  write: "edit",
  edit: "edit",
  apply_patch: "edit",
  glob: "glob",
  grep: "grep",
  list: "list",
  webfetch: "webfetch",
  task: "task",
  todowrite: "todowrite",
  todoread: "todoread",
  skill: "skill"
}

export interface CreateAgentInput {
  /** What the agent should do, in the user's words. */
  readonly description: string
  /** Default `all`. */
  readonly mode?: AgentMode
  /** The built-in tools it may use (`AGENT_TOOLS` keys); every tool when absent. */
  readonly tools?: ReadonlyArray<string>
  /** Write to the global config dir instead of the project's `.agent/agent/`. */
  readonly global?: boolean
  /** The model that writes the definition (default: the configured model). */
  readonly model?: ModelRef
}

export interface CreatedAgent {
  readonly name: string
  readonly file: string
  readonly description: string
  readonly mode: AgentMode
  readonly prompt: string
  /** Permissions denied because their tools were not chosen. */
  readonly denied: ReadonlyArray<string>
}

/** Generating or saving an agent failed; `detail` says why and what to do. */
export class AgentGenerationError extends Schema.TaggedError<AgentGenerationError>()("AgentGenerationError", {
  detail: Schema.String
}) {
  override get message() {
    return `Agent generation failed: ${this.detail}`
  }
}

export interface AgentGeneratorShape {
  /** Asks the model for a name (not one already taken), a when-to-use description and a system prompt. */
  readonly generate: (input: { readonly description: string; readonly model?: ModelRef }) => Effect.Effect<
    GeneratedAgent,
    AgentGenerationError | ModelNotConfigured
  >
  /** Generates an agent and writes it as a markdown agent file that the registry loads. */
  readonly create: (input: CreateAgentInput) => Effect.Effect<CreatedAgent, AgentGenerationError | ModelNotConfigured>
}

/** `agent agent create`: an agent from a description, written as `.agent/agent/<name>.md`. */
export class AgentGenerator extends Context.Tag("@agent/core/AgentGenerator")<AgentGenerator, AgentGeneratorShape>() {
  static readonly layer: Layer.Layer<AgentGenerator, never, AgentRegistry | ProviderRegistry | LLMService | Instance> =
    Layer.effect(AgentGenerator, make())
}

const TOOL_NAME = "agent_definition"
const decodeGenerated = Schema.decodeUnknownEither(GeneratedAgent, { errors: "all", onExcessProperty: "ignore" })
const { $schema: _ignored, ...generatedJsonSchema } = JSONSchema.make(GeneratedAgent) as unknown as Record<string, unknown>

/** A name a markdown file can carry: lowercase words joined by hyphens. */
export const agentFileName = (identifier: string): string =>
  identifier
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 50)
    .replace(/-+$/, "")

/** The permissions to deny so that only `tools` remain. */
export const deniedPermissions = (tools: ReadonlyArray<string>): Array<string> => {
  const allowed = new Set(tools.map((tool) => AGENT_TOOLS[tool]))
  return [...new Set(Object.values(AGENT_TOOLS))].filter((permission) => !allowed.has(permission))
}

/** The markdown agent file: front matter (description, mode, denied permissions) and the prompt as body. */
export const agentFile = (agent: { description: string; mode: AgentMode; denied: ReadonlyArray<string>; prompt: string }): string => {
  const front: Record<string, unknown> = { description: agent.description, mode: agent.mode }
  if (agent.denied.length > 0) front.permission = Object.fromEntries(agent.denied.map((permission) => [permission, "deny"]))
  return `---\n${toYaml(front, { lineWidth: 0 })}---\n\n${agent.prompt.trim()}\n`
}

/** The JSON object in a text answer, for models that reply in text instead of calling the tool. */
const jsonInText = (text: string): unknown => {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text)
  const candidate = (fenced?.[1] ?? text).trim()
  const start = candidate.indexOf("{")
  const end = candidate.lastIndexOf("}")
  if (start < 0 || end < start) return undefined
  try {
    return JSON.parse(candidate.slice(start, end + 1))
  } catch {
    return undefined
  }
}

function make() {
  return Effect.gen(function*() {
    const agents = yield* AgentRegistry
    const providers = yield* ProviderRegistry
    const llm = yield* LLMService
    const instance = yield* Instance
    const fail = (detail: string) => new AgentGenerationError({ detail })

    const generate = Effect.fn("AgentGenerator.generate")(function*(input: { readonly description: string; readonly model?: ModelRef }) {
      const description = input.description.trim()
      if (!description) return yield* fail("the description is empty; say what the agent should do")
      const model = yield* providers.resolve(input.model ?? (yield* providers.defaultModel()))
      const taken = (yield* agents.list()).map((agent) => agent.name)
      let called: unknown
      let invalid: string | undefined
      let text = ""
      yield* llm.stream({
        model,
        system: [Prompts.read("agent/generate.txt")],
        messages: [{
          role: "user",
          content: Prompts.read("agent/generate-request.txt")
            .replace("{description}", description)
            .replace("{existing}", taken.join(", "))
        }],
        tools: [{ id: TOOL_NAME, description: Prompts.read("agent/generate-tool.txt"), parameters: generatedJsonSchema }],
        toolChoice: "required",
        temperature: 0.3
      }).pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            if (event.type === "text-delta") text += event.text
            if (event.type === "tool-call" && event.toolName === TOOL_NAME && called === undefined) {
              if (event.invalid) invalid = event.invalid
              else called = event.input
            }
          })
        ),
        Effect.mapError((error) => fail(`the model call failed: ${error.message}`))
      )
      const answer = called ?? jsonInText(text)
      if (answer === undefined) {
        return yield* fail(
          invalid
            ? `the model's agent definition was malformed: ${invalid}`
            : `the model did not answer with an agent definition${text.trim() ? `; it said: ${text.trim().slice(0, 300)}` : ""}`
        )
      }
      const decoded = decodeGenerated(answer)
      if (Either.isLeft(decoded)) {
        return yield* fail(`the model's agent definition is incomplete: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}`)
      }
      const generated = {
        identifier: decoded.right.identifier.trim(),
        whenToUse: decoded.right.whenToUse.trim(),
        systemPrompt: decoded.right.systemPrompt.trim()
      }
      const empty = (Object.keys(generated) as Array<keyof GeneratedAgent>).filter((key) => generated[key] === "")
      if (empty.length > 0) return yield* fail(`the model left ${empty.join(" and ")} empty; try again with a more detailed description`)
      return generated
    })

    const create = Effect.fn("AgentGenerator.create")(function*(input: CreateAgentInput) {
      const unknown = (input.tools ?? []).filter((tool) => !(tool in AGENT_TOOLS))
      if (unknown.length > 0) {
        return yield* fail(`unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}; choose from ${Object.keys(AGENT_TOOLS).join(", ")}`)
      }
      if (!input.global && isEnvFlag(instance.env.AGENT_DISABLE_PROJECT_CONFIG)) {
        return yield* fail("project config is disabled (AGENT_DISABLE_PROJECT_CONFIG), so a project agent would not load; write it to the global config dir instead")
      }
      const generated = yield* generate({ description: input.description, ...(input.model ? { model: input.model } : {}) })
      const dir = input.global ? path.join(instance.paths.config, "agent") : path.join(instance.worktree, ".agent", "agent")
      const mode = input.mode ?? "all"
      const denied = input.tools === undefined ? [] : deniedPermissions(input.tools)
      const content = agentFile({ description: generated.whenToUse, mode, denied, prompt: generated.systemPrompt })

      // The model was told which names are taken; make sure, and never overwrite a file.
      const taken = new Set((yield* agents.list()).map((agent) => agent.name))
      const base = agentFileName(generated.identifier) || "custom-agent"
      const written = yield* Effect.try({
        try: () => {
          fs.mkdirSync(dir, { recursive: true })
          for (let n = 1; ; n++) {
            const name = n === 1 ? base : `${base}-${n}`
            if (taken.has(name)) continue
            const file = path.join(dir, `${name}.md`)
            try {
              fs.writeFileSync(file, content, { flag: "wx" })
              return { name, file }
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
            }
          }
        },
        catch: (error) => fail(`could not write the agent file in ${dir}: ${error instanceof Error ? error.message : String(error)}`)
      })

      // The file must load as it would at the next start; a file that does not is removed.
      const check = yield* Effect.either(loadConfig(instance))
      const loaded = Either.isRight(check) ? check.right.config.agent?.[written.name] : undefined
      if (!loaded) {
        fs.rmSync(written.file, { force: true })
        return yield* fail(
          Either.isLeft(check)
            ? `the configuration does not load with the new agent file, so it was removed: ${check.left.message}`
            : `the new agent file ${written.file} is not picked up by the configuration, so it was removed`
        )
      }
      return {
        name: written.name,
        file: written.file,
        description: generated.whenToUse,
        mode,
        prompt: generated.systemPrompt,
        denied
      } satisfies CreatedAgent
    })

    return { generate, create } satisfies AgentGeneratorShape
  })
}
