import { type Config, type ModelRef, parseModelRef } from "@agent/domain"
import type { LanguageModelV3 } from "@ai-sdk/provider"
import { Context, Effect, Layer, Schema } from "effect"
import { ConfigService } from "../config/ConfigService.js"
import { Instance } from "../runtime/Instance.js"
import { modelFetch } from "./ModelTransport.js"

/** What the runtime knows about a model: limits for overflow checks, prices for cost. */
export interface ModelInfo {
  readonly providerID: string
  readonly modelID: string
  readonly name: string
  readonly limit: {
    readonly context: number
    readonly input?: number
    readonly output: number
  }
  /** USD per million tokens. */
  readonly cost?: {
    readonly input: number
    readonly output: number
    readonly cacheRead?: number
    readonly cacheWrite?: number
  }
}

export interface ResolvedModel {
  readonly info: ModelInfo
  /** The provider's language model, which LLMService streams from. */
  readonly language: LanguageModelV3
  /** `provider.<id>.models.<model>.options`: provider options sent with every call of this model. */
  readonly options?: Readonly<Record<string, unknown>>
  /** `provider.<id>.models.<model>.variants`: named option sets an agent's `variant` picks from. */
  readonly variants?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  /** Where the provider's SDK reads provider options: `anthropic`, `openai`, else the provider id. */
  readonly optionsKey?: string
}

/** No model could be chosen or built: says what to configure. */
export class ModelNotConfigured extends Schema.TaggedError<ModelNotConfigured>()("ModelNotConfigured", {
  model: Schema.optional(Schema.String),
  detail: Schema.String
}) {
  override get message() {
    const what = this.model ? `Model "${this.model}" is not usable: ${this.detail}` : this.detail
    return `${what}\n${CONFIGURE_HINT}`
  }
}

const CONFIGURE_HINT = [
  "Configure a model in agent.json (or opencode.json), for example:",
  '  { "model": "anthropic/claude-sonnet-4-5" }  with ANTHROPIC_API_KEY set',
  '  { "model": "openai/gpt-5" }                 with OPENAI_API_KEY set',
  "or a local OpenAI-compatible server (ollama, vLLM, LM Studio):",
  '  { "provider": { "ollama": { "npm": "@ai-sdk/openai-compatible",',
  '      "options": { "baseURL": "http://localhost:11434/v1" }, "models": { "qwen3-coder": {} } } },',
  '    "model": "ollama/qwen3-coder" }'
].join("\n")

/**
 * Resolves `provider/model` references to ai SDK language models. The live layer builds
 * providers from config; tests replace this one node with a scripted model.
 */
export class ProviderRegistry extends Context.Tag("@agent/core/ProviderRegistry")<
  ProviderRegistry,
  {
    readonly resolve: (ref: ModelRef) => Effect.Effect<ResolvedModel, ModelNotConfigured>
    /** `model` from config, else the first built-in provider with a key. */
    readonly defaultModel: () => Effect.Effect<ModelRef, ModelNotConfigured>
    /** `small_model` from config, if any (title generation falls back to the session's model). */
    readonly smallModel: () => Effect.Effect<ModelRef | undefined>
  }
>() {
  /** Providers from config plus the built-in `anthropic` and `openai`, keys from the environment. */
  static get layer(): Layer.Layer<ProviderRegistry, never, ConfigService | Instance> {
    return layer
  }
}

// --- live layer ------------------------------------------------------------------------------

/** Limits and prices (USD per 1M tokens) of well-known models; config overrides them. */
const KNOWN_MODELS: ReadonlyArray<{ readonly match: RegExp; readonly limit: ModelInfo["limit"]; readonly cost?: ModelInfo["cost"] }> = [
  { match: /claude-opus-4/, limit: { context: 200_000, output: 32_000 }, cost: { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 } },
  { match: /claude-sonnet-4|claude-3-7-sonnet/, limit: { context: 200_000, output: 64_000 }, cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
  { match: /claude-haiku-4/, limit: { context: 200_000, output: 64_000 }, cost: { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 } },
  { match: /claude/, limit: { context: 200_000, output: 8_192 } },
  { match: /gpt-5.*mini/, limit: { context: 400_000, output: 128_000 }, cost: { input: 0.25, output: 2, cacheRead: 0.025 } },
  { match: /gpt-5.*nano/, limit: { context: 400_000, output: 128_000 }, cost: { input: 0.05, output: 0.4, cacheRead: 0.005 } },
  { match: /gpt-5/, limit: { context: 400_000, output: 128_000 }, cost: { input: 1.25, output: 10, cacheRead: 0.125 } },
  { match: /gpt-4\.1/, limit: { context: 1_047_576, output: 32_768 }, cost: { input: 2, output: 8, cacheRead: 0.5 } },
  { match: /gpt-4o/, limit: { context: 128_000, output: 16_384 }, cost: { input: 2.5, output: 10, cacheRead: 1.25 } },
  { match: /^o[134]/, limit: { context: 200_000, output: 100_000 } }
]
const DEFAULT_LIMIT: ModelInfo["limit"] = { context: 128_000, output: 16_384 }

const BUNDLED_PACKAGES = ["@ai-sdk/anthropic", "@ai-sdk/openai", "@ai-sdk/openai-compatible"] as const
type BundledPackage = (typeof BUNDLED_PACKAGES)[number]

const BUILT_IN: Record<string, { readonly npm: BundledPackage; readonly env: string; readonly name: string; readonly defaultModel: string }> = {
  anthropic: { npm: "@ai-sdk/anthropic", env: "ANTHROPIC_API_KEY", name: "Anthropic", defaultModel: "claude-sonnet-4-5" },
  openai: { npm: "@ai-sdk/openai", env: "OPENAI_API_KEY", name: "OpenAI", defaultModel: "gpt-5" }
}

type Env = Readonly<Record<string, string | undefined>>

/** The API key of a provider: `options.apiKey`, its `env` variables, else the built-in variable. */
const apiKeyOf = (config: Config, env: Env, providerID: string): { readonly key: string; readonly from: string } | undefined => {
  const configured = config.provider?.[providerID]
  if (configured?.options?.apiKey) return { key: configured.options.apiKey, from: `provider.${providerID}.options.apiKey` }
  for (const name of configured?.env ?? []) if (env[name]) return { key: env[name], from: name }
  const builtIn = BUILT_IN[providerID]
  return builtIn && env[builtIn.env] ? { key: env[builtIn.env]!, from: builtIn.env } : undefined
}

/** Limits and prices of `ref`: from config, else from the well-known models, else defaults. */
export const modelInfoOf = (config: Config, ref: ModelRef): ModelInfo => {
  const configured = config.provider?.[ref.providerID]?.models?.[ref.modelID]
  const known = KNOWN_MODELS.find((entry) => entry.match.test(ref.modelID))
  const cost = configured?.cost
    ? {
      input: configured.cost.input,
      output: configured.cost.output,
      ...(configured.cost.cache_read !== undefined ? { cacheRead: configured.cost.cache_read } : {}),
      ...(configured.cost.cache_write !== undefined ? { cacheWrite: configured.cost.cache_write } : {})
    }
    : known?.cost
  return {
    providerID: ref.providerID,
    modelID: ref.modelID,
    name: configured?.name ?? ref.modelID,
    limit: configured?.limit
      ? {
        context: configured.limit.context,
        output: configured.limit.output,
        ...(configured.limit.input !== undefined ? { input: configured.limit.input } : {})
      }
      : known?.limit ?? DEFAULT_LIMIT,
    ...(cost ? { cost } : {})
  }
}

/** The `providerOptions` key each bundled SDK reads; openai-compatible reads the provider's own name. */
const optionsKeyOf = (config: Config, providerID: string): string => {
  const npm = config.provider?.[providerID]?.npm ?? BUILT_IN[providerID]?.npm
  if (npm === "@ai-sdk/anthropic") return "anthropic"
  if (npm === "@ai-sdk/openai") return "openai"
  // The SDK names itself `<name>.chat` and reads the part before the first dot.
  return providerID.split(".")[0]!.trim()
}

/** Why `disabled_providers` or `enabled_providers` keep `providerID` from being used, if they do. */
export const switchedOff = (config: Config, providerID: string): string | undefined => {
  if (config.disabled_providers?.includes(providerID)) return `provider "${providerID}" is turned off by disabled_providers`
  const enabled = config.enabled_providers
  if (enabled && !enabled.includes(providerID)) {
    return `provider "${providerID}" is not in enabled_providers (${enabled.length > 0 ? enabled.join(", ") : "empty"})`
  }
  return undefined
}

/** How a provider would be built, or why it cannot be. */
const accessOf = (config: Config, env: Env, providerID: string):
  | { readonly npm: BundledPackage; readonly apiKey?: { readonly key: string; readonly from: string } }
  | { readonly problem: string } =>
{
  const off = switchedOff(config, providerID)
  if (off) return { problem: off }
  const configured = config.provider?.[providerID]
  const builtIn = BUILT_IN[providerID]
  if (!configured && !builtIn) return { problem: `no provider "${providerID}" is configured` }
  const npm = configured?.npm ?? builtIn?.npm ?? "@ai-sdk/openai-compatible"
  if (!(BUNDLED_PACKAGES as ReadonlyArray<string>).includes(npm)) {
    return { problem: `provider "${providerID}" uses package "${npm}", which is not bundled (use one of ${BUNDLED_PACKAGES.join(", ")})` }
  }
  const apiKey = apiKeyOf(config, env, providerID)
  if (npm !== "@ai-sdk/openai-compatible" && !apiKey) {
    return { problem: `no API key for provider "${providerID}"${builtIn ? `: set ${builtIn.env}` : ""} or provider.${providerID}.options.apiKey` }
  }
  if (npm === "@ai-sdk/openai-compatible" && !configured?.options?.baseURL) {
    return { problem: `provider "${providerID}" needs options.baseURL` }
  }
  return { npm: npm as BundledPackage, ...(apiKey ? { apiKey } : {}) }
}

/** A provider as `agent models` shows it. */
export interface ProviderSummary {
  readonly id: string
  readonly name: string
  readonly npm: string
  readonly builtIn: boolean
  readonly configured: boolean
  /** Where the API key comes from (a variable name or a config key), when there is one. */
  readonly credentials?: string
  /** Why the provider's models cannot be used now; absent when they can. */
  readonly problem?: string
  /** Models named in config (`provider.<id>.models`, `model`, `small_model`), plus a built-in provider's default model. */
  readonly models: ReadonlyArray<ModelInfo>
}

/** The built-in providers and those in config, with whether each can be used as configured. */
export const providerCatalog = (config: Config, env: Env): ReadonlyArray<ProviderSummary> => {
  const chosen = [config.model, config.small_model].flatMap((value) => {
    const ref = value === undefined ? undefined : parseModelRef(value)
    return ref ? [ref] : []
  })
  const ids = [...new Set([...Object.keys(BUILT_IN), ...Object.keys(config.provider ?? {}), ...chosen.map((ref) => ref.providerID)])]
  return ids.map((id) => {
    const configured = config.provider?.[id]
    const builtIn = BUILT_IN[id]
    const access = accessOf(config, env, id)
    const modelIDs = [
      ...new Set([
        ...(builtIn ? [builtIn.defaultModel] : []),
        ...Object.keys(configured?.models ?? {}),
        ...chosen.filter((ref) => ref.providerID === id).map((ref) => ref.modelID)
      ])
    ]
    return {
      id,
      name: configured?.name ?? builtIn?.name ?? id,
      npm: configured?.npm ?? builtIn?.npm ?? "@ai-sdk/openai-compatible",
      builtIn: builtIn !== undefined,
      configured: configured !== undefined,
      ...("problem" in access ? { problem: access.problem } : access.apiKey ? { credentials: access.apiKey.from } : {}),
      models: modelIDs.map((modelID) => modelInfoOf(config, { providerID: id, modelID }))
    }
  })
}

export const layer: Layer.Layer<ProviderRegistry, never, ConfigService | Instance> = Layer.effect(
  ProviderRegistry,
  Effect.gen(function*() {
    const config = yield* (yield* ConfigService).get()
    const instance = yield* Instance
    const env = instance.env
    const languageModels = new Map<string, LanguageModelV3>()

    // Provider packages are loaded on first use: a run pays only for the provider it talks to.
    const build = (ref: ModelRef): Effect.Effect<LanguageModelV3, ModelNotConfigured> => {
      const label = `${ref.providerID}/${ref.modelID}`
      const access = accessOf(config, env, ref.providerID)
      if ("problem" in access) return Effect.fail(new ModelNotConfigured({ model: label, detail: access.problem }))
      const configured = config.provider?.[ref.providerID]
      const apiKey = access.apiKey?.key
      const baseURL = configured?.options?.baseURL
      const headers = configured?.options?.headers
      const modelID = configured?.models?.[ref.modelID]?.id ?? ref.modelID
      const common = { ...(baseURL ? { baseURL } : {}), ...(headers ? { headers } : {}), fetch: modelFetch }
      const load = <A>(make: () => Promise<A>) =>
        Effect.tryPromise({
          try: make,
          catch: (error) => new ModelNotConfigured({ model: label, detail: `cannot load ${access.npm}: ${error instanceof Error ? error.message : String(error)}` })
        })
      switch (access.npm) {
        case "@ai-sdk/anthropic":
          return load(async () => (await import("@ai-sdk/anthropic")).createAnthropic({ ...common, apiKey: apiKey! }).languageModel(modelID))
        case "@ai-sdk/openai":
          return load(async () => (await import("@ai-sdk/openai")).createOpenAI({ ...common, apiKey: apiKey! }).languageModel(modelID))
        case "@ai-sdk/openai-compatible":
          return load(async () =>
            (await import("@ai-sdk/openai-compatible")).createOpenAICompatible({
              name: ref.providerID,
              baseURL: baseURL!,
              includeUsage: true,
              fetch: modelFetch,
              ...(apiKey ? { apiKey } : {}),
              ...(headers ? { headers } : {})
            }).chatModel(modelID)
          )
      }
    }

    // Called every step (or every tool call): untraced, a span would cost more than the call.
    const resolve = Effect.fnUntraced(function*(ref: ModelRef) {
      const key = `${ref.providerID}/${ref.modelID}`
      let language = languageModels.get(key)
      if (!language) {
        language = yield* build(ref)
        languageModels.set(key, language)
      }
      const configured = config.provider?.[ref.providerID]?.models?.[ref.modelID]
      return {
        info: modelInfoOf(config, ref),
        language,
        optionsKey: optionsKeyOf(config, ref.providerID),
        ...(configured?.options ? { options: configured.options } : {}),
        ...(configured?.variants ? { variants: configured.variants } : {})
      }
    })

    const defaultModel = Effect.fn("ProviderRegistry.defaultModel")(function*() {
      if (config.model) {
        const ref = parseModelRef(config.model)
        if (!ref) return yield* new ModelNotConfigured({ model: config.model, detail: 'expected "provider/model"' })
        return ref
      }
      for (const [providerID, builtIn] of Object.entries(BUILT_IN)) {
        if (!switchedOff(config, providerID) && apiKeyOf(config, env, providerID)) return { providerID, modelID: builtIn.defaultModel }
      }
      const off = Object.keys(BUILT_IN).filter((providerID) => switchedOff(config, providerID) && apiKeyOf(config, env, providerID))
      return yield* new ModelNotConfigured({
        detail: off.length > 0
          ? `No model is configured, and the providers with a key are turned off by disabled_providers/enabled_providers (${off.join(", ")}).`
          : "No model is configured and no ANTHROPIC_API_KEY or OPENAI_API_KEY is set."
      })
    })

    return {
      resolve,
      defaultModel,
      smallModel: () => Effect.succeed(config.small_model ? parseModelRef(config.small_model) : undefined)
    }
  })
)
