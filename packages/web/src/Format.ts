/** Numbers and times as the page shows them. */

export const tokens = (count: number | undefined): string => {
  const value = count ?? 0
  if (value < 1000) return String(value)
  if (value < 1_000_000) return `${(value / 1000).toFixed(value < 10_000 ? 1 : 0)}k`
  return `${(value / 1_000_000).toFixed(1)}M`
}

export const cost = (usd: number | undefined): string => {
  const value = usd ?? 0
  return value === 0 ? "$0" : value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`
}

export const duration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`
}

export const ago = (time: number, now: number): string => {
  const seconds = Math.max(0, Math.round((now - time) / 1000))
  if (seconds < 60) return `${seconds}s ago`
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`
  return new Date(time).toLocaleDateString()
}

/** All tokens of a usage record (input counts cached ones separately here). */
export const totalTokens = (usage: { readonly total?: number | undefined; readonly input: number; readonly output: number; readonly reasoning: number; readonly cache: { readonly read: number; readonly write: number } } | undefined): number =>
  usage === undefined ? 0 : usage.total ?? usage.input + usage.output + usage.reasoning + usage.cache.read + usage.cache.write
