/**
 * The provider options of one model call, as OpenCode builds them: the model's own `options`
 * (`provider.<id>.models.<model>.options`), then the agent's `options` (unknown agent keys land
 * there when config loads), then the chosen variant of the model, each merged deeply over the
 * one before. The SDK reads them under the key of its package.
 */
import type { ResolvedModel } from "./ProviderRegistry.js"

export type Options = Readonly<Record<string, unknown>>

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `over` merged into `base`: objects key by key, anything else (arrays included) replaced. */
export const mergeOptions = (base: Options, over: Options): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(over)) {
    if (key === "__proto__") continue
    const prior = out[key]
    out[key] = isPlainObject(prior) && isPlainObject(value) ? mergeOptions(prior, value) : value
  }
  return out
}

/** The settings of a model's variant, or nothing when it has no such variant (or it is disabled). */
export const variantOptions = (variants: ResolvedModel["variants"], variant: string | undefined): Options => {
  if (variant === undefined || variants === undefined || !Object.hasOwn(variants, variant)) return {}
  const { disabled, ...settings } = variants[variant]!
  return disabled === true ? {} : settings
}

/** Whether `variant` names a variant of the model that is not disabled. */
export const hasVariant = (variants: ResolvedModel["variants"], variant: string): boolean =>
  variants !== undefined && Object.hasOwn(variants, variant) && variants[variant]!.disabled !== true

/** What a call adds over the model's own options: the agent's, then the variant's. */
export const callOptions = (input: {
  readonly model: Pick<ResolvedModel, "variants">
  readonly agent: { readonly options: Options }
  readonly variant?: string | undefined
}): Record<string, unknown> => mergeOptions(input.agent.options, variantOptions(input.model.variants, input.variant))

/** The SDK call's `providerOptions`: the model's options with the call's over them, under the SDK's key; none when empty. */
export const providerOptions = (
  model: Pick<ResolvedModel, "info" | "options" | "optionsKey">,
  options: Options | undefined
): Record<string, Record<string, unknown>> | undefined => {
  const merged = mergeOptions(model.options ?? {}, options ?? {})
  if (Object.keys(merged).length === 0) return undefined
  return { [model.optionsKey ?? model.info.providerID]: merged }
}
