import type { TokenUsage } from "@agent/domain"
import type { LanguageModelV3Usage } from "@ai-sdk/provider"
import type { ModelInfo } from "./ProviderRegistry.js"

// A model step's tokens and cost, in OpenCode's accounting.

// --- usage and cost --------------------------------------------------------------------------

export interface SdkUsage {
  readonly inputTokens: number | undefined
  readonly inputTokenDetails?: {
    readonly noCacheTokens: number | undefined
    readonly cacheReadTokens: number | undefined
    readonly cacheWriteTokens: number | undefined
  }
  readonly outputTokens: number | undefined
  readonly outputTokenDetails?: { readonly reasoningTokens: number | undefined }
  readonly totalTokens: number | undefined
}

/** OpenCode's accounting: input excludes cached tokens, output excludes reasoning. */
export const toTokenUsage = (usage: SdkUsage): TokenUsage => {
  const cacheRead = usage.inputTokenDetails?.cacheReadTokens ?? 0
  const cacheWrite = usage.inputTokenDetails?.cacheWriteTokens ?? 0
  const reasoning = usage.outputTokenDetails?.reasoningTokens ?? 0
  const inputTotal = usage.inputTokens ?? 0
  const input = usage.inputTokenDetails?.noCacheTokens ?? Math.max(0, inputTotal - cacheRead - cacheWrite)
  const output = Math.max(0, (usage.outputTokens ?? 0) - reasoning)
  return {
    input,
    output,
    reasoning,
    cache: { read: cacheRead, write: cacheWrite },
    total: usage.totalTokens ?? input + output + reasoning + cacheRead + cacheWrite
  }
}

/** USD for one step; reasoning is billed at the output rate. */
export const costOf = (info: ModelInfo, usage: TokenUsage): number => {
  const price = info.cost
  if (!price) return 0
  return (
    (usage.input * price.input +
      (usage.output + usage.reasoning) * price.output +
      usage.cache.read * (price.cacheRead ?? price.input) +
      usage.cache.write * (price.cacheWrite ?? price.input)) /
    1_000_000
  )
}

/** The provider's usage in the SDK's reporting shape (what `toTokenUsage` reads). */
export const sdkUsage = (usage: LanguageModelV3Usage): SdkUsage => ({
  inputTokens: usage.inputTokens.total,
  inputTokenDetails: {
    noCacheTokens: usage.inputTokens.noCache,
    cacheReadTokens: usage.inputTokens.cacheRead,
    cacheWriteTokens: usage.inputTokens.cacheWrite
  },
  outputTokens: usage.outputTokens.total,
  outputTokenDetails: { reasoningTokens: usage.outputTokens.reasoning },
  totalTokens: usage.inputTokens.total === undefined && usage.outputTokens.total === undefined
    ? undefined
    : (usage.inputTokens.total ?? 0) + (usage.outputTokens.total ?? 0)
})
