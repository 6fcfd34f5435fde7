import { describe, expect, it } from "@effect/vitest"
import { envWithMcp, mcpConfigOf } from "../src/AcpRuntimes.js"

describe("mcpConfigOf", () => {
  it("stdio servers are local, http and sse remote, with their env and headers", () =>
    expect(mcpConfigOf([
      { name: "files", command: "node", args: ["server.js", "--root", "/p"], env: [{ name: "TOKEN", value: "t" }] },
      { type: "http", name: "docs", url: "https://docs.example/mcp", headers: [{ name: "Authorization", value: "Bearer x" }] },
      { type: "sse", name: "old", url: "https://old.example/sse", headers: [] }
    ])).toEqual({
      files: { type: "local", command: ["node", "server.js", "--root", "/p"], environment: { TOKEN: "t" } },
      docs: { type: "remote", url: "https://docs.example/mcp", headers: { Authorization: "Bearer x" }, oauth: false },
      old: { type: "remote", url: "https://old.example/sse", oauth: false }
    }))
})

describe("envWithMcp", () => {
  const servers = { files: { type: "local" as const, command: ["node", "s.js"] as [string, ...Array<string>] } }
  it("no client servers: the environment as it is", () => expect(envWithMcp({ A: "1" }, {})).toEqual({ A: "1" }))
  it("adds the servers as inline config", () =>
    expect(JSON.parse(envWithMcp({ A: "1" }, servers).AGENT_CONFIG_CONTENT!)).toEqual({ mcp: servers }))
  it("keeps the user's own inline config and servers; the client's win a name clash", () => {
    const own = JSON.stringify({ model: "x/y", mcp: { mine: { type: "remote", url: "https://m" }, files: { enabled: false } } })
    expect(JSON.parse(envWithMcp({ AGENT_CONFIG_CONTENT: own }, servers).AGENT_CONFIG_CONTENT!)).toEqual({
      model: "x/y",
      mcp: { mine: { type: "remote", url: "https://m" }, files: servers.files }
    })
  })
})
