/**
 * Who may talk to the server: the `Host` a request names (against DNS rebinding, where a web page
 * reaches a local server under the page's own name) and the `Origin` a browser sends (against
 * other web pages, local ones included, driving it with the user's browser). Pure decisions here;
 * Server.ts applies them before anything else, preflights included.
 */
import * as net from "node:net"

export interface HostName {
  /** Lower case, without brackets or a trailing dot. */
  readonly name: string
  readonly port?: number
}

/** `name`, `name:port`, `[v6]` or `[v6]:port`; undefined when it is none of these. */
export const parseHost = (value: string): HostName | undefined => {
  const text = value.trim().toLowerCase()
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(text)
  const plain = bracketed ? undefined : /^([^:[\]\s/@]+?)\.?(?::(\d{1,5}))?$/.exec(text)
  const match = bracketed ?? plain
  if (!match || !match[1]) return undefined
  return { name: match[1], ...(match[2] !== undefined ? { port: Number(match[2]) } : {}) }
}

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"]

/** `::ffff:127.0.0.1` is 127.0.0.1. */
const plainAddress = (address: string) => address.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "")

const isLoopbackAddress = (address: string) => {
  const plain = plainAddress(address)
  return plain === "::1" || /^127\.\d+\.\d+\.\d+$/.test(plain)
}

export interface HostContext {
  /** The connection's local address and port (where this request came in). */
  readonly localAddress: string
  readonly localPort: number
  /** The address the server was told to listen on (`--hostname`). */
  readonly hostname: string
  /** Extra names (`--allowed-host`): `name` (any port), `name:port`, or `*` (any host at all). */
  readonly allowedHosts: ReadonlyArray<string>
}

/** The names the server answers to on this connection, for error messages. */
export const ownHosts = (context: HostContext): ReadonlyArray<string> => {
  const names = new Set<string>()
  if (isLoopbackAddress(context.localAddress)) for (const name of LOOPBACK_NAMES) names.add(name)
  names.add(plainAddress(context.localAddress))
  // The name it was told to listen on, also 0.0.0.0 (which the startup line prints).
  const bound = net.isIPv6(context.hostname) ? plainAddress(context.hostname) : parseHost(context.hostname)?.name
  if (bound !== undefined) names.add(bound)
  return [...names]
}

const withPort = (name: string, port: number) => `${net.isIPv6(name) ? `[${name}]` : name}:${port}`

/** Whether `Host: value` names this server: its own names with its port, or a configured one. */
export const hostAllowed = (value: string | undefined, context: HostContext): boolean => {
  if (context.allowedHosts.includes("*")) return true
  const host = value === undefined ? undefined : parseHost(value)
  if (!host) return false
  const port = host.port ?? 80
  for (const entry of context.allowedHosts) {
    const allowed = parseHost(entry)
    if (allowed && allowed.name === host.name && (allowed.port === undefined || allowed.port === port)) return true
  }
  return port === context.localPort && ownHosts(context).includes(host.name)
}

export const hostRefusal = (value: string | undefined, context: HostContext): string =>
  `the Host ${value === undefined ? "(none)" : JSON.stringify(value)} is not a name this server answers to ` +
  `(${ownHosts(context).map((name) => withPort(name, context.localPort)).join(", ")}` +
  `${context.allowedHosts.length > 0 ? `, ${context.allowedHosts.join(", ")}` : ""}); ` +
  `a page that reached it under another name is refused. Add a name with --allowed-host or server.allowed_hosts.`

/**
 * Whether a browser request from `origin` may use the server: an origin given with `--cors`, or
 * the server's own (the scheme and the Host this request was sent to). Any other page, also one
 * on another localhost port, is refused; requests without an Origin (not from a browser) pass.
 */
export const originAllowed = (origin: string, host: string | undefined, cors: ReadonlySet<string>): boolean => {
  if (cors.has(origin)) return true
  if (host === undefined) return false
  const own = host.toLowerCase()
  const given = origin.toLowerCase()
  return given === `http://${own}` || given === `https://${own}`
}

export const originRefusal = (origin: string): string =>
  `a browser page from the origin ${JSON.stringify(origin)} may not use this server; ` +
  `allow an origin with --cors or server.cors`
