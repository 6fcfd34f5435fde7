// Secrets in configuration, hidden wherever config is shown, served or exported (`agent debug
// config`, `GET /config`, agent options). A value is a secret by where it sits (a provider's
// apiKey, any header, an MCP server's environment, an OAuth client secret, a key named like a
// credential) or by where it came from (any text a `{env:...}` or `{file:...}` reference put in).
// Enough is kept to recognise it: `sk-...f3a9`.

/** Keys (identifiers, not patterns) whose string values are credentials wherever they appear. */
const SECRET_KEY = /^[\w-]*(api[-_]?key|secret|token|password|passwd|credential|authorization|private[-_]?key)[\w-]*$|^(auth|bearer|cookie)$/i

/** Whether a key or an environment variable's name says it holds a credential (`OPENAI_API_KEY`, `GH_TOKEN`). */
export const isSecretName = (name: string): boolean => SECRET_KEY.test(name)

/** Records whose every value may be a credential: HTTP headers and an MCP server's environment. */
const SECRET_RECORDS = new Set(["headers", "environment"])

/**
 * Keys whose values must keep their form (a `provider/model`, an agent name, a literal): shown as
 * they are even when a reference filled them in; none of them holds a credential (only string
 * values: `mode` is also the legacy record of agents).
 */
const PLAIN_KEYS = new Set(["model", "small_model", "default_agent", "mode", "color", "share", "$schema", "npm"])

/** Records keyed by patterns or tool names, whose values are actions: no key there names a credential. */
const RULE_RECORDS = new Set(["permission", "tools"])

/** Shown in place of a secret too short to show any of. */
const HIDDEN = "***"

/** `sk-...f3a9` for a long value; `***` for one so short that showing 7 characters would give it away. */
export const maskSecret = (value: string): string =>
  value.length >= 16 ? `${value.slice(0, 3)}...${value.slice(-4)}` : value.length === 0 ? value : HIDDEN

/**
 * The config's substitutions: each non-empty text a `{env:VAR}` or `{file:path}` reference put in,
 * with the reference, so a masked value can say where it came from.
 */
export type Substitutions = ReadonlyMap<string, string>

/**
 * A whole http(s) URL stays one (the config schema checks URLs where it shows them, and a client
 * decodes them): its scheme and host, then the masked rest, `https://hooks.example/...wxyz`.
 */
const maskUrl = (value: string): string | undefined => {
  if (!/^https?:\/\/\S+$/.test(value)) return undefined
  try {
    const url = new URL(value)
    return `${url.protocol}//${url.host}/...${value.length >= 16 ? value.slice(-4) : ""}`
  } catch {
    return undefined
  }
}

const maskWithOrigin = (value: string, substitutions: Substitutions): string => {
  const url = maskUrl(value)
  if (url !== undefined) return url
  const token = substitutions.get(value)
  return token === undefined ? maskSecret(value) : `${maskSecret(value)} (${token})`
}

/** A string with every substituted text in it masked (`Bearer {env:TOKEN}` → `Bearer abc...wxyz (...)`). */
const maskSubstituted = (value: string, substitutions: Substitutions): string => {
  if (substitutions.has(value)) return maskWithOrigin(value, substitutions)
  let out = value
  // Longest first, so a text that holds a shorter substituted one is masked whole.
  for (const secret of [...substitutions.keys()].sort((a, b) => b.length - a.length)) {
    if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join(maskWithOrigin(secret, substitutions))
  }
  return out
}

/**
 * A copy of `value` (a config, or part of one such as an agent's options) with its secrets masked.
 * `inSecret` marks a subtree under a secret record or key: every string in it is masked.
 */
export const redactSecrets = <A>(value: A, substitutions: Substitutions = new Map(), inSecret = false): A =>
  redact(value, substitutions, inSecret ? "secret" : "keys") as A

/**
 * `secret`: every string is one; `keys`: strings under credential-like keys are, and substituted
 * texts; `rules`: only substituted texts; `plain`: nothing (PLAIN_KEYS).
 */
type Mode = "secret" | "keys" | "rules" | "plain"

const redact = (value: unknown, substitutions: Substitutions, mode: Mode): unknown => {
  if (typeof value === "string") {
    return mode === "secret" ? maskWithOrigin(value, substitutions) : mode === "plain" ? value : maskSubstituted(value, substitutions)
  }
  if (Array.isArray(value)) return value.map((item) => redact(item, substitutions, mode))
  if (value === null || typeof value !== "object") return value
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) {
    const next: Mode = mode === "secret"
      ? "secret"
      : mode === "keys" && (SECRET_KEY.test(key) || SECRET_RECORDS.has(key))
      ? "secret"
      : mode === "keys" && RULE_RECORDS.has(key)
      ? "rules"
      : mode === "keys" && PLAIN_KEYS.has(key) && typeof item === "string"
      ? "plain"
      : mode
    out[key] = redact(item, substitutions, next)
  }
  return out
}

/** The effective config as it may be shown: secrets masked. */
export const shownConfig = <C>(info: { readonly config: C; readonly substitutions?: Substitutions | undefined }): C =>
  redactSecrets(info.config, info.substitutions)
