import type { PermissionConfig, SandboxConfig } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { Effect } from "effect"
import { makeAgentRegistry } from "../../src/agent/AgentRegistry.js"
import { makeInstanceInfo } from "../../src/runtime/Instance.js"
import * as Permission from "../../src/permission/Permission.js"
import { bwrapArgs, KEEPER_EXEC, KEEPER_WAIT, keeperReports, readStatusLine } from "../../src/sandbox/Bwrap.js"
import { type FileView, layout, type LayoutInput } from "../../src/sandbox/Layout.js"
import { allows, parseHostRule, splitTarget } from "../../src/sandbox/NetworkProxy.js"
import { blockedWrites, networkFailures, notice } from "../../src/sandbox/Report.js"
import { resolveSettings } from "../../src/sandbox/Settings.js"

const base = { directory: "/work/project", home: "/home/me" }

describe("sandbox settings: defaults", () => {
  const cases: ReadonlyArray<[string, SandboxConfig | undefined, Partial<ReturnType<typeof resolveSettings>>]> = [
    ["nothing configured", undefined, { mode: "workspace-write", network: { kind: "none" }, enforce: "preferred", enforceSource: "default" }],
    ["a mode chosen: required", { mode: "read-only" }, { mode: "read-only", enforce: "required" }],
    ["mode off stays preferred", { mode: "off" }, { mode: "off", enforce: "preferred" }],
    ["enforce given wins", { mode: "workspace-write", enforce: "preferred" }, { enforce: "preferred", enforceSource: "config" }],
    ["network true", { network: true }, { network: { kind: "all" }, enforce: "preferred" }],
    ["an empty host list is no network", { network: [] }, { network: { kind: "none" } }],
    ["hosts, lower-cased, once", { network: ["Registry.NPMJS.org", "registry.npmjs.org", "*.github.com"] }, {
      network: { kind: "hosts", hosts: ["registry.npmjs.org", "*.github.com"] }
    }],
    ["paths: ~, $HOME, relative, absolute", { writable: ["~/.npm", "$HOME/.cache/pip", "build", "/opt/cache"], readonly: ["vendor"] }, {
      writable: ["/home/me/.npm", "/home/me/.cache/pip", "/work/project/build", "/opt/cache"],
      readonly: ["/work/project/vendor"]
    }]
  ]
  for (const [name, config, expected] of cases) {
    it(name, () => expect(resolveSettings(config, base)).toMatchObject(expected))
  }
})

/** A filesystem of the given paths (directories end with `/`). */
const files = (entries: ReadonlyArray<string>, links: Record<string, string> = {}): FileView => ({
  kind: (file) => {
    const real = links[file] ?? file
    return entries.includes(`${real}/`) ? "directory" : entries.includes(real) ? "file" : "missing"
  },
  real: (file) => links[file] ?? file,
  gitdir: (dotGit) => (dotGit === "/work/wt/.git" ? "/work/main/.git/worktrees/wt" : undefined)
})

const input = (config: SandboxConfig | undefined, extra: Partial<LayoutInput> = {}): LayoutInput => ({
  settings: resolveSettings(config, base),
  directory: "/work/project",
  worktree: "/work/project",
  configDirs: ["/work/project"],
  temporary: ["/tmp"],
  scratch: ["/tmp/agent", "/home/me/.local/share/agent/tool-output"],
  internal: ["/tmp/agent-sandbox-1"],
  ...extra
})

const summary = (result: ReturnType<typeof layout>) => result.mounts.map((mount) => `${mount.kind} ${mount.path}`)

describe("sandbox layout", () => {
  const disk = files([
    "/work/project/",
    "/work/project/.git/",
    "/work/project/agent.json",
    "/work/project/AGENTS.md",
    "/work/project/vendor/",
    "/tmp/",
    "/tmp/agent/",
    "/tmp/agent-sandbox-1/",
    "/home/me/.local/share/agent/tool-output/",
    "/home/me/.npm/"
  ])

  it("workspace-write: project, temp and scratch writable; present protected paths read-only; absent config held; shallow first", () => {
    expect(summary(layout(input(undefined), disk))).toEqual([
      "writable /tmp",
      "writable /work/project",
      "writable /tmp/agent",
      "readonly /tmp/agent-sandbox-1",
      "readonly /work/project/.git",
      "readonly /work/project/agent.json",
      "readonly /work/project/AGENTS.md",
      "placeholder /work/project/.agent",
      "placeholder /work/project/.opencode",
      "placeholder /work/project/.claude",
      "placeholder /work/project/.agents",
      "placeholder /work/project/agent.jsonc",
      "placeholder /work/project/opencode.json",
      "placeholder /work/project/opencode.jsonc",
      "writable /home/me/.local/share/agent/tool-output"
    ])
  })

  it("read-only: nothing writable but what is configured; protection only matters inside it", () => {
    expect(summary(layout(input({ mode: "read-only", writable: ["~/.npm"] }), disk))).toEqual(["writable /home/me/.npm"])
    expect(summary(layout(input({ mode: "read-only" }), disk))).toEqual([])
  })

  it("a protected path listed in writable is released; readonly paths and missing writable ones", () => {
    const result = layout(input({ writable: [".git", "~/.cargo/registry"], readonly: ["vendor", "not-there"] }), disk)
    expect(summary(result)).not.toContain("readonly /work/project/.git")
    expect(summary(result)).toContain("readonly /work/project/vendor")
    expect(summary(result).some((line) => line.includes("not-there"))).toBe(false)
    expect(result.missing).toEqual(["/home/me/.cargo/registry"])
  })

  it("a git worktree: the .git file and the directory it points to, when writable, are protected", () => {
    const worktree = files(["/work/wt/", "/work/wt/.git", "/work/main/", "/work/main/.git/", "/work/main/.git/worktrees/wt/", "/tmp/"])
    const result = layout(
      input({ writable: ["/work/main"] }, { directory: "/work/wt", worktree: "/work/wt", configDirs: ["/work/wt"], scratch: [], internal: [] }),
      worktree
    )
    expect(summary(result)).toContain("readonly /work/wt/.git")
    expect(summary(result)).toContain("readonly /work/main/.git/worktrees/wt")
  })

  it("config dirs from the work-tree root down are all protected; symlinked roots are resolved", () => {
    const nested = files(["/real/repo/", "/real/repo/.git/", "/real/repo/pkg/", "/real/repo/pkg/opencode.json", "/tmp/"], {
      "/work/repo": "/real/repo",
      "/work/repo/pkg": "/real/repo/pkg",
      "/work/repo/pkg/opencode.json": "/real/repo/pkg/opencode.json",
      "/work/repo/.git": "/real/repo/.git"
    })
    const result = layout(
      input(undefined, { directory: "/work/repo/pkg", worktree: "/work/repo", configDirs: ["/work/repo", "/work/repo/pkg"], scratch: [], internal: [] }),
      nested
    )
    expect(summary(result)).toContain("writable /real/repo")
    expect(summary(result)).toContain("readonly /real/repo/.git")
    expect(summary(result)).toContain("readonly /real/repo/pkg/opencode.json")
    expect(summary(result)).toContain("placeholder /real/repo/agent.json")
  })
})

describe("bubblewrap command line", () => {
  const mounts = [
    { path: "/work/project", kind: "writable" as const },
    { path: "/work/project/.git", kind: "readonly" as const },
    { path: "/work/project/agent.json", kind: "placeholder" as const }
  ]
  it("namespaces, mounts in order, no capabilities; bubblewrap reports the status and the sandbox's end", () => {
    const args = bwrapArgs({
      layout: { mounts, missing: [] },
      empty: "/tmp/s/empty",
      cwd: "/work/project",
      proc: true,
      isolateNetwork: true,
      keeper: "wait",
      argv: ["/bin/bash", "-c", "make test"]
    })
    expect(args).toEqual([
      "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
      "--bind", "/work/project", "/work/project",
      "--ro-bind", "/work/project/.git", "/work/project/.git",
      "--ro-bind", "/tmp/s/empty", "/work/project/agent.json",
      "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net",
      "--json-status-fd", "3", "--sync-fd", "4",
      "--cap-drop", "ALL", "--chdir", "/work/project", "--",
      "/bin/bash", "-c", "make test"
    ])
  })
  it("with a proxy, the keeper shell starts the bridge and reports; a long-lived program is exec'd by it", () => {
    const options = {
      layout: { mounts: [], missing: [] },
      empty: "/e",
      cwd: "/w",
      proc: true,
      isolateNetwork: true,
      proxySocket: "/tmp/s/proxy-1.sock",
      argv: ["/bin/bash", "-c", "curl example.com"]
    }
    const waiting = bwrapArgs({ ...options, keeper: "wait" })
    expect(waiting).not.toContain("--json-status-fd")
    expect(waiting.slice(-9)).toEqual(["/bin/sh", "-c", KEEPER_WAIT, "agent-sandbox", "3128", "/tmp/s/proxy-1.sock", "/bin/bash", "-c", "curl example.com"])
    expect(keeperReports({ ...options, keeper: "wait" })).toBe(true)
    // Without a fresh /proc the keeper cannot see the jobs: it execs the command, and nothing is reported.
    expect(bwrapArgs({ ...options, keeper: "wait", proc: false })).toContain(KEEPER_EXEC)
    expect(keeperReports({ ...options, keeper: "wait", proc: false })).toBe(false)
    // No proxy, a long-lived program: run as it is, nothing reported.
    const { proxySocket: _, ...plain } = options
    const exec = bwrapArgs({ ...plain, keeper: "exec" })
    expect(exec.slice(-4)).toEqual(["--", "/bin/bash", "-c", "curl example.com"])
    expect(exec).not.toContain("--sync-fd")
  })
  it.each([
    ["r", { ready: true }],
    ["e 0", { ready: true, exit: 0 }],
    ["e 130", { ready: true, exit: 130 }],
    ['{ "child-pid": 19734, "mnt-namespace": 4026532177, "pid-namespace": 4026532178 }', undefined],
    ['{ "exit-code": 2 }', { ready: true, exit: 2 }],
    ["", undefined]
  ])("status line %j", (line, expected) => {
    expect(readStatusLine(line)).toEqual(expected)
  })
  it("without a fresh /proc the host's is hidden; the whole network is shared; a proxy is bridged", () => {
    const args = bwrapArgs({
      layout: { mounts: [], missing: [] },
      empty: "/e",
      cwd: "/",
      proc: false,
      isolateNetwork: false,
      keeper: "exec",
      proxySocket: "/tmp/s/proxy-1.sock",
      argv: ["server", "--stdio"]
    })
    expect(args.slice(0, 7)).toEqual(["--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/proc"])
    expect(args).not.toContain("--unshare-net")
    expect(args.slice(-4)).toEqual(["3128", "/tmp/s/proxy-1.sock", "server", "--stdio"])
  })
})

describe("what the sandbox blocked, read from the output", () => {
  const cwd = "/work/project"
  const mounts = [
    { path: "/work/project", kind: "writable" as const },
    { path: "/work/project/agent.json", kind: "readonly" as const },
    { path: "/work/project/.agent", kind: "placeholder" as const }
  ]
  const cases: ReadonlyArray<[string, string, ReadonlyArray<string>]> = [
    ["bash redirect", "/bin/bash: line 1: /etc/x: Read-only file system", ["/etc/x"]],
    ["dash redirect", "sh: 1: cannot create /usr/local/y: Read-only file system", ["/usr/local/y"]],
    ["relative", "/bin/bash: line 3: .git/config: Read-only file system", ["/work/project/.git/config"]],
    ["coreutils quotes", "touch: cannot touch '/opt/z': Read-only file system", ["/opt/z"]],
    ["UTF-8 quotes", "mkdir: cannot create directory \u2018/srv/d\u2019: Read-only file system", ["/srv/d"]],
    ["python", "OSError: [Errno 30] Read-only file system: '/home/me/.cache/x'", ["/home/me/.cache/x"]],
    ["node", "Error: EROFS: read-only file system, open '/home/me/.npmrc'", ["/home/me/.npmrc"]],
    ["git", "fatal: Unable to create '/work/project/.git/index.lock': Read-only file system", ["/work/project/.git/index.lock"]],
    ["a protected mount point", "rm: cannot remove 'agent.json': Device or resource busy", ["/work/project/agent.json"]],
    ["a placeholder", "/bin/bash: line 1: .agent: Is a directory", ["/work/project/.agent"]],
    ["busy elsewhere is not the sandbox", "rm: cannot remove '/mnt/usb': Device or resource busy", []],
    ["no path named", "npm ERR! Read-only file system", ["a read-only path"]],
    ["twice, once", "a: /x: Read-only file system\nb: /x: Read-only file system", ["/x"]]
  ]
  for (const [name, output, expected] of cases) {
    it(name, () => expect(blockedWrites(output, cwd, mounts).map((entry) => entry.target)).toEqual(expected))
  }

  const network: ReadonlyArray<[string, string, ReadonlyArray<string>]> = [
    ["curl", "curl: (6) Could not resolve host: registry.npmjs.org", ["registry.npmjs.org"]],
    ["curl, refused", "curl: (7) Failed to connect to 127.0.0.1 port 8080 after 0 ms: Couldn't connect to server", ["127.0.0.1:8080"]],
    ["node", "Error: getaddrinfo EAI_AGAIN github.com", ["github.com"]],
    ["node, refused", "Error: connect ECONNREFUSED 127.0.0.1:5432", ["127.0.0.1:5432"]],
    ["pip", "Failed to establish a new connection: [Errno -3] Temporary failure in name resolution", ["network"]],
    ["nothing", "all good", []]
  ]
  for (const [name, output, expected] of network) {
    it(`network: ${name}`, () => expect(networkFailures(output).map((entry) => entry.target)).toEqual(expected))
  }

  it("the note names what was blocked, what is allowed, and the way out", () => {
    const text = notice(
      [{ kind: "write", target: "/etc/x" }, { kind: "network", target: "example.com:443" }],
      resolveSettings({ network: ["registry.npmjs.org"] }, base)
    )
    expect(text).toContain("The sandbox blocked writing to /etc/x")
    expect(text).toContain("a connection to example.com:443; the network allowed to sandboxed commands: only registry.npmjs.org (through a proxy)")
    expect(text).toContain("`unsandboxed: true`")
  })
})

describe("allowed hosts", () => {
  const rules = ["registry.npmjs.org", "*.github.com", "localhost:8080", "[::1]"].map(parseHostRule)
  const cases: ReadonlyArray<[string, number, boolean]> = [
    ["registry.npmjs.org", 443, true],
    ["REGISTRY.npmjs.org.", 443, true],
    ["evil-registry.npmjs.org", 443, false],
    ["api.github.com", 443, true],
    ["github.com", 443, false],
    ["localhost", 8080, true],
    ["localhost", 8081, false],
    ["::1", 22, true],
    ["127.0.0.1", 80, false]
  ]
  for (const [host, port, expected] of cases) it(`${host}:${port}`, () => expect(allows(rules, host, port)).toBe(expected))
  it("CONNECT targets", () => {
    expect(splitTarget("example.com:8443", 443)).toEqual({ host: "example.com", port: 8443 })
    expect(splitTarget("[::1]:443", 80)).toEqual({ host: "::1", port: 443 })
    expect(splitTarget("example.com", 443)).toEqual({ host: "example.com", port: 443 })
  })
})

describe("the sandboxed pattern in permission rules", () => {
  const rules = (config: PermissionConfig) => Permission.fromConfig(config)
  const decide = (config: PermissionConfig, command: string, sandboxed: boolean) =>
    Permission.evaluate("bash", command, Permission.forSandbox(rules(config), sandboxed)).action
  const cases: ReadonlyArray<[string, PermissionConfig, string, boolean, string]> = [
    ["sandboxed runs without asking", { bash: { "*": "ask", sandboxed: "allow" } }, "make", true, "allow"],
    ["unsandboxed still asks", { bash: { "*": "ask", sandboxed: "allow" } }, "make", false, "ask"],
    ["a later deny still denies in the sandbox", { bash: { "*": "ask", sandboxed: "allow", "rm *": "deny" } }, "rm -rf x", true, "deny"],
    ["a later ask still asks in the sandbox", { bash: { sandboxed: "allow", "git push *": "ask" } }, "git push origin", true, "ask"],
    ["an earlier allow is overridden by it", { bash: { "ls *": "allow", sandboxed: "ask" } }, "ls -la", true, "ask"],
    ["without sandboxed rules nothing changes", { bash: { "*": "ask" } }, "make", true, "ask"]
  ]
  for (const [name, config, command, sandboxed, expected] of cases) {
    it(name, () => expect(decide(config, command, sandboxed)).toBe(expected))
  }
  it("an unreadable command in the sandbox: the sandboxed rule is a catch-all there", () => {
    const ruleset = Permission.forSandbox(rules({ bash: { "*": "ask", sandboxed: "allow" } }), true)
    expect(Permission.evaluateOpaque("bash", "$R x", ruleset).action).toBe("allow")
    const denying = Permission.forSandbox(rules({ bash: { "*": "ask", sandboxed: "allow", "rm *": "deny" } }), true)
    expect(Permission.evaluateOpaque("bash", "$R x", denying).action).toBe("deny")
  })
  it("the same ruleset comes back when no rule names sandboxed", () => {
    const plain = rules({ bash: { "*": "ask" } })
    expect(Permission.forSandbox(plain, true)).toBe(plain)
  })
})

describe("paths in the layout are absolute", () => {
  it("relative writable entries resolve against the project directory", () => {
    expect(path.isAbsolute(resolveSettings({ writable: ["out"] }, base).writable[0]!)).toBe(true)
  })
})

describe("sandbox config per agent", () => {
  it("the top-level keys reach every agent; an agent's own keys replace them one by one; leaving asks by default", () => {
    const instance = makeInstanceInfo({ directory: "/work/project", home: "/home/me", env: {} })
    const registry = makeAgentRegistry(instance, {
      config: {
        sandbox: { network: ["registry.npmjs.org"], writable: ["~/.npm"] },
        agent: { plan: { sandbox: { mode: "read-only" } }, helper: { mode: "subagent", sandbox: { network: true } } }
      },
      origin: () => undefined
    })
    const get = (name: string) => Effect.runSync(registry.get(name))
    expect(get("build").sandbox).toEqual({ network: ["registry.npmjs.org"], writable: ["~/.npm"] })
    expect(get("plan").sandbox).toEqual({ network: ["registry.npmjs.org"], writable: ["~/.npm"], mode: "read-only" })
    expect(get("helper").sandbox).toEqual({ network: true, writable: ["~/.npm"] })
    expect(Permission.evaluate("sandbox_escape", "npm install", get("build").permission).action).toBe("ask")
    expect(Permission.evaluate("sandbox_escape", "npm install", get("helper").permission).action).toBe("ask")
  })
})
