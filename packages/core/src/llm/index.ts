// llm/: The model: providers and their catalog, the transport, message conversion, the streaming call, and
// recorded (replay) models.
// What other subsystems use of it; they import it from here, never from its files.
import type { ProviderError } from "./LLMService.js"
import type { ModelNotConfigured } from "./ProviderRegistry.js"

export { INVALID_TOOL, LLMService, ProviderError } from "./LLMService.js"
export type { LLMEvent, ToolSpec } from "./LLMService.js"
export { ModelMessageCache } from "./MessageConversion.js"
export type { LiveMessage } from "./MessageConversion.js"
export * as ProviderOptions from "./ProviderOptions.js"
export { mergeOptions } from "./ProviderOptions.js"
export { ProviderRegistry, providerCatalog } from "./ProviderRegistry.js"
export type { ModelInfo, ModelNotConfigured, ResolvedModel } from "./ProviderRegistry.js"

/** The errors this subsystem's services fail with. */
export type LLMError = ProviderError | ModelNotConfigured
