// Who answers the asks of `agent run` when nobody is at the terminal: `permission.approver` and the
// `--approver*` flags, decided as a plain function (table-tested in cli's test/ApproverSettings.test.ts);
// and what of it `agent serve` applies to its own sessions' asks (`serveApproverSettings`).
import type { ApproverConfig, ApproverFallback, PermissionRequest } from "@agent/domain"

/** An `agent serve` that holds asks: where, and its Basic credentials. */
export interface ApproverServer {
  /** Without credentials: shown in messages and links. */
  readonly url: string
  readonly authorization?: string
}

export interface ApproverSettings {
  /** An `agent serve` this run posts its asks to (POST /permission/remote). */
  readonly server?: ApproverServer
  /**
   * The `agent serve` whose own session asks (its url, for links): it holds the ask itself, so
   * nothing is posted to it; the webhook links there. Set by `agent serve`, and by `--attach` for
   * the attached server's approver.
   */
  readonly here?: string
  readonly webhook?: { readonly url: string; readonly headers: Readonly<Record<string, string>> }
  /** Seconds. */
  readonly timeout: number
  readonly fallback: ApproverFallback
}

export interface ApproverFlags {
  readonly approver?: string
  readonly timeout?: number
  readonly fallback?: string
}

export const DEFAULT_APPROVER_TIMEOUT = 300

/** `user:password@` in the url, else AGENT_SERVER_USERNAME / AGENT_SERVER_PASSWORD (as `--attach`); the default user is `agent`. */
export const parseServer = (
  value: string,
  env: Readonly<Record<string, string | undefined>>,
  what: string
): ApproverServer | string => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return `${what}: not a url: ${value} (expected e.g. http://127.0.0.1:4096)`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${what}: expected an http:// or https:// url, got ${value}`
  const username = url.username ? decodeURIComponent(url.username) : env.AGENT_SERVER_USERNAME || undefined
  const password = url.password ? decodeURIComponent(url.password) : env.AGENT_SERVER_PASSWORD || undefined
  url.username = ""
  url.password = ""
  const base = url.toString().replace(/\/+$/, "")
  return password === undefined
    ? { url: base }
    : { url: base, authorization: `Basic ${Buffer.from(`${username ?? "agent"}:${password}`).toString("base64")}` }
}

/**
 * The approver of a run: the flags over `permission.approver`; `undefined` when neither names a
 * server or a webhook (a headless ask is then rejected, as always). A string is the error to show.
 */
export const approverSettings = (
  config: ApproverConfig | undefined,
  flags: ApproverFlags,
  env: Readonly<Record<string, string | undefined>>
): ApproverSettings | undefined | string => {
  const configured = typeof config === "string" ? { url: config } : config ?? {}
  const serverUrl = flags.approver ?? configured.url
  const webhook = configured.webhook
  if (serverUrl === undefined && webhook === undefined) {
    if (flags.timeout !== undefined || flags.fallback !== undefined) {
      return "--approver-timeout and --approver-fallback need an approver (--approver or permission.approver)"
    }
    return undefined
  }
  if (flags.fallback !== undefined && flags.fallback !== "deny" && flags.fallback !== "allow") {
    return `--approver-fallback: expected deny or allow, got ${JSON.stringify(flags.fallback)}`
  }
  if (flags.timeout !== undefined && !(flags.timeout > 0)) return `--approver-timeout: expected seconds above 0, got ${flags.timeout}`
  const server = serverUrl === undefined ? undefined : parseServer(serverUrl, env, flags.approver !== undefined ? "--approver" : "permission.approver.url")
  if (typeof server === "string") return server
  return {
    ...(server ? { server } : {}),
    ...(webhook ? { webhook: { url: webhook, headers: configured.headers ?? {} } } : {}),
    timeout: flags.timeout ?? configured.timeout ?? DEFAULT_APPROVER_TIMEOUT,
    fallback: (flags.fallback as ApproverFallback | undefined) ?? configured.fallback ?? "deny"
  }
}

/** The parts of `permission.approver` a server applies (as `ApproverConfig`, or as `GET /config` shows it, secrets masked). */
export type ServeApproverConfig =
  | string
  | {
    /** For `agent run`: a server does not use it. */
    readonly url?: string | undefined
    readonly webhook?: string | undefined
    readonly headers?: Readonly<Record<string, string>> | undefined
    readonly timeout?: number | undefined
    readonly fallback?: ApproverFallback | undefined
  }

/**
 * What `agent serve` applies to the asks of its own sessions: `webhook`, `timeout` and `fallback`
 * of `permission.approver`, when it names a webhook or a timeout. Its `url` is for `agent run`
 * (the server holds its own asks; it forwards them nowhere), so a url alone changes nothing here.
 */
export const serveApproverSettings = (config: ServeApproverConfig | undefined, here: string): ApproverSettings | undefined => {
  if (config === undefined || typeof config === "string") return undefined
  if (config.webhook === undefined && config.timeout === undefined) return undefined
  return {
    here,
    ...(config.webhook ? { webhook: { url: config.webhook, headers: config.headers ?? {} } } : {}),
    timeout: config.timeout ?? DEFAULT_APPROVER_TIMEOUT,
    fallback: config.fallback ?? "deny"
  }
}

/** One line for a person: the command, the file, the URL an ask is about. */
export const summaryOf = (request: PermissionRequest): string => {
  const { metadata } = request
  for (const key of ["command", "filepath", "url", "path"]) {
    const value = metadata[key]
    if (typeof value === "string" && value.length > 0) return `${request.permission}: ${value}`
  }
  return `${request.permission}: ${request.patterns.join(", ")}`
}

/** Where the run says what an approver decided, for a script's author reading stderr. */
export const describeSettings = (settings: ApproverSettings) =>
  [
    settings.server ? `agent serve at ${settings.server.url}` : settings.here ? `a person on agent serve at ${settings.here}` : undefined,
    settings.webhook ? `webhook ${settings.webhook.url}` : undefined
  ]
    .filter((part) => part !== undefined)
    .join(" and ")
