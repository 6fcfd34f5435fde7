// llm/: The model: providers and their catalog, the transport, message conversion, the streaming call, and
// recorded (replay) models.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).
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
