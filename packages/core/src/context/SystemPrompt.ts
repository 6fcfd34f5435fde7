import type { Agent } from "@agent/domain"
import * as Prompts from "../runtime/Prompts.js"
import { type InstanceInfo } from "../runtime/Instance.js"
import type { ModelInfo } from "../llm/ProviderRegistry.js"

/** The provider prompt for a model family, used when the agent has no prompt of its own. */
export const providerPrompt = (model: ModelInfo): string => {
  const id = model.modelID.toLowerCase()
  if (/claude/.test(id)) return Prompts.read("provider/anthropic.txt")
  if (/gpt-|^o[134](-|$)|codex/.test(id)) return Prompts.read("provider/openai.txt")
  if (/gemini/.test(id)) return Prompts.read("provider/gemini.txt")
  return Prompts.read("provider/default.txt")
}

/** Where the agent is working, recomputed every step (the date may change in a long run). */
export const environment = (instance: InstanceInfo, model: ModelInfo, now = new Date()): string =>
  [
    `You are powered by the model ${model.modelID} (provider ${model.providerID}).`,
    "<env>",
    `Working directory: ${instance.directory}`,
    `Project root: ${instance.worktree}`,
    `Is the directory a git repository: ${instance.vcs ? "yes" : "no"}`,
    `Platform: ${instance.platform}`,
    `Today's date: ${now.toDateString()}`,
    "</env>"
  ].join("\n")

/**
 * The three layers: the agent's prompt (or the provider's), then the environment with
 * instruction files and the skills list, then the user message's own `system`.
 */
export const build = (input: {
  readonly agent: Agent
  readonly model: ModelInfo
  readonly instance: InstanceInfo
  readonly instructions: ReadonlyArray<string>
  readonly userSystem?: string | undefined
}): ReadonlyArray<string> => [
  input.agent.prompt ?? providerPrompt(input.model),
  [environment(input.instance, input.model), ...input.instructions].join("\n\n"),
  ...(input.userSystem ? [input.userSystem] : [])
]
