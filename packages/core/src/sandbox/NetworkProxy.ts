/**
 * The proxy behind `network: [hosts]`: an HTTP proxy (CONNECT for TLS, absolute URLs for plain
 * HTTP) on a unix socket, which a sandbox reaches through a bridge in its own network namespace,
 * where nothing else is reachable. It lets through the allowed hosts and remembers the others.
 * One per sandboxed process, so what it refused is that command's.
 */
import { Effect, type Scope } from "effect"
import * as http from "node:http"
import * as net from "node:net"

export interface HostRule {
  readonly host: string
  /** `*.example.com`: subdomains only. */
  readonly subdomains: boolean
  readonly port?: number
}

export const parseHostRule = (entry: string): HostRule => {
  const lower = entry.toLowerCase()
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(lower)
  if (bracket) return { host: bracket[1]!, subdomains: false, ...(bracket[2] ? { port: Number(bracket[2]) } : {}) }
  const match = /^(\*\.)?([^:]+)(?::(\d+))?$/.exec(lower)
  if (!match) return { host: lower, subdomains: false }
  return { host: match[2]!, subdomains: match[1] !== undefined, ...(match[3] ? { port: Number(match[3]) } : {}) }
}

/** Whether `host:port` is allowed by one of `rules`. */
export const allows = (rules: ReadonlyArray<HostRule>, host: string, port: number): boolean => {
  const name = host.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "")
  return rules.some((rule) =>
    (rule.port === undefined || rule.port === port) &&
    (rule.subdomains ? name.endsWith(`.${rule.host}`) : name === rule.host)
  )
}

/** `host:port` of a CONNECT target; IPv6 in brackets. */
export const splitTarget = (target: string, fallbackPort: number): { readonly host: string; readonly port: number } => {
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(target)
  if (bracket) return { host: bracket[1]!, port: bracket[2] ? Number(bracket[2]) : fallbackPort }
  const colon = target.lastIndexOf(":")
  if (colon === -1) return { host: target, port: fallbackPort }
  const port = Number(target.slice(colon + 1))
  return { host: target.slice(0, colon), port: Number.isInteger(port) ? port : fallbackPort }
}

export interface NetworkProxy {
  readonly socket: string
  /** `host:port` of each refused connection, first refusal first. */
  readonly blocked: () => ReadonlyArray<string>
}

const refusal = (host: string, port: number) =>
  `The agent's sandbox blocked this connection: ${host}:${port} is not among the hosts allowed by sandbox.network.\n`

/** Listens on `socket` until the scope closes. */
export const start = (socket: string, hosts: ReadonlyArray<string>): Effect.Effect<NetworkProxy, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ readonly server: http.Server; readonly open: Set<net.Socket>; readonly blocked: Array<string> }, Error>((resume) => {
      const rules = hosts.map(parseHostRule)
      const blocked: Array<string> = []
      const open = new Set<net.Socket>()
      const refuse = (host: string, port: number) => {
        const target = `${host}:${port}`
        if (!blocked.includes(target)) blocked.push(target)
        return refusal(host, port)
      }
      const server = http.createServer((request, response) => {
        let url: URL
        try {
          url = new URL(request.url ?? "")
        } catch {
          response.writeHead(400, { "content-type": "text/plain" }).end("The sandbox's proxy takes absolute URLs only.\n")
          return
        }
        const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
        const host = url.hostname.replace(/^\[|\]$/g, "")
        if (!allows(rules, host, port)) {
          response.writeHead(403, { "content-type": "text/plain", "x-agent-sandbox": "blocked" }).end(refuse(host, port))
          return
        }
        const upstream = http.request(
          { host, port, method: request.method, path: `${url.pathname}${url.search}`, headers: request.headers },
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(response)
          }
        )
        upstream.on("error", (error) => {
          if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" })
          response.end(`The sandbox's proxy could not reach ${host}:${port}: ${error.message}\n`)
        })
        request.pipe(upstream)
      })
      server.on("connection", (connection: net.Socket) => {
        open.add(connection)
        connection.once("close", () => open.delete(connection))
      })
      server.on("connect", (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
        const { host, port } = splitTarget(request.url ?? "", 443)
        client.on("error", () => client.destroy())
        if (!allows(rules, host, port)) {
          const body = refuse(host, port)
          client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nx-agent-sandbox: blocked\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
          return
        }
        const upstream = net.connect(port, host)
        open.add(upstream)
        upstream.once("close", () => open.delete(upstream))
        upstream.once("connect", () => {
          client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
          if (head.length > 0) upstream.write(head)
          upstream.pipe(client)
          client.pipe(upstream)
        })
        upstream.on("error", (error) => {
          if (client.writable && upstream.connecting) client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\n${error.message}\n`)
          else client.destroy()
        })
        client.once("close", () => upstream.destroy())
      })
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen(socket, () => resume(Effect.succeed({ server, open, blocked })))
    }),
    ({ open, server }) =>
      Effect.async<void>((resume) => {
        for (const connection of open) connection.destroy()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ blocked }) => ({ socket, blocked: () => [...blocked] })))
