import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { ConfigService } from "../src/config/ConfigService.js"
import { Instance } from "../src/runtime/Instance.js"
import { InstructionLoader } from "../src/context/InstructionLoader.js"

/** Builds a loader over a fresh sandbox; `logs` collects everything it logs. */
const loaderFor = (options: TestInstance.TestInstanceOptions, setup?: (box: TestInstance.Sandbox) => void) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox(options)
    setup?.(box)
    const logs: Array<string> = []
    const capture = Logger.make(({ message }) => {
      logs.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
    })
    const logging = Logger.replace(Logger.defaultLogger, capture)
    const context = yield* Layer.build(
      InstructionLoader.layer.pipe(
        Layer.provideMerge(ConfigService.layer),
        Layer.provideMerge(Layer.succeed(Instance, box.instance))
      )
    ).pipe(Effect.provide(logging))
    const built = Context.get(context, InstructionLoader)
    // Whichever fiber first resolves the configured entries logs their failures: capture both.
    const loader: typeof built = {
      system: () => built.system().pipe(Effect.provide(logging)),
      files: () => built.files().pipe(Effect.provide(logging)),
      sources: () => built.sources().pipe(Effect.provide(logging)),
      forRead: (input) => built.forRead(input).pipe(Effect.provide(logging)),
      release: (input) => built.release(input),
      attached: (scope) => built.attached(scope)
    }
    return { loader, box, logs }
  })

/** The source paths named in the `Instructions from:` headers of system entries. */
const sources = (entries: ReadonlyArray<string>) => entries.map((entry) => /^Instructions from: (.*)$/m.exec(entry)![1])

/** A local HTTP server answering `routes`; unknown paths get 404, `hang` paths never answer. */
const serve = (routes: Record<string, string>, hang: ReadonlyArray<string> = []) =>
  Effect.acquireRelease(
    Effect.async<{ server: http.Server; url: (p: string) => string }>((resume) => {
      const server = http.createServer((request, response) => {
        if (hang.includes(request.url ?? "")) return
        const body = routes[request.url ?? ""]
        if (body === undefined) {
          response.writeHead(404).end("missing")
          return
        }
        response.writeHead(200, { "content-type": "text/markdown" }).end(body)
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ server, url: (p: string) => `http://127.0.0.1:${port}${p}` }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/** A URL nothing listens on: a port that was just freed. */
const deadUrl = Effect.async<string>((resume) => {
  const server = http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(`http://127.0.0.1:${port}/rules.md`)))
  })
})

const monorepo = {
  "project/AGENTS.md": "Root rules: use pnpm.",
  "project/CLAUDE.md": "Claude root rules (should lose to AGENTS.md).",
  "project/packages/AGENTS.md": "Packages rules: every package has tests.",
  "project/packages/app/AGENTS.md": "App rules: React only.",
  "project/packages/app/CLAUDE.md": "App Claude rules (should lose to AGENTS.md).",
  "project/packages/app/src/index.ts": "export {}\n",
  "project/packages/app/src/util.ts": "export {}\n",
  "project/packages/lib/src/index.ts": "export {}\n",
  "project/packages/tools/CLAUDE.md": "Tools package rules from CLAUDE.md.",
  "project/packages/tools/main.ts": "export {}\n"
}

describe("InstructionLoader project files", () => {
  it.scopedLive("at the root, only the root AGENTS.md goes into the system prompt", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: monorepo })
      const system = yield* loader.system()
      expect(system).toEqual([`Instructions from: ${box.path("project/AGENTS.md")}\nRoot rules: use pnpm.`])
      expect(yield* loader.files()).toEqual([box.path("project/AGENTS.md")])
    }))

  it.scopedLive("in a package, every AGENTS.md from the root down is used, and no CLAUDE.md", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: monorepo, cwd: "project/packages/app" })
      expect(sources(yield* loader.system())).toEqual([
        box.path("project/AGENTS.md"),
        box.path("project/packages/AGENTS.md"),
        box.path("project/packages/app/AGENTS.md")
      ])
    }))

  it.scopedLive("CLAUDE.md files are used only when there is no AGENTS.md on the path, CONTEXT.md last", () =>
    Effect.gen(function*() {
      const claude = yield* loaderFor({
        files: {
          "project/CLAUDE.md": "root claude",
          "project/CONTEXT.md": "root context",
          "project/sub/CLAUDE.md": "sub claude",
          "project/sub/deeper/.keep": ""
        },
        cwd: "project/sub/deeper"
      })
      expect(yield* claude.loader.system()).toEqual([
        `Instructions from: ${claude.box.path("project/CLAUDE.md")}\nroot claude`,
        `Instructions from: ${claude.box.path("project/sub/CLAUDE.md")}\nsub claude`
      ])

      const context = yield* loaderFor({ files: { "project/CONTEXT.md": "root context" } })
      expect(yield* context.loader.system()).toEqual([`Instructions from: ${context.box.path("project/CONTEXT.md")}\nroot context`])

      // One AGENTS.md anywhere on the path (here only in the working directory) beats CLAUDE.md everywhere.
      const agents = yield* loaderFor({
        files: { "project/CLAUDE.md": "root claude", "project/sub/AGENTS.md": "sub agents" },
        cwd: "project/sub"
      })
      expect(sources(yield* agents.loader.system())).toEqual([agents.box.path("project/sub/AGENTS.md")])
    }))

  it.scopedLive("files above the work-tree root are not used", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: { "AGENTS.md": "outside the repo", "project/AGENTS.md": "inside" } })
      expect(sources(yield* loader.system())).toEqual([box.path("project/AGENTS.md")])
    }))
})

describe("InstructionLoader with AGENT_DISABLE_PROJECT_CONFIG", () => {
  it.scopedLive("project files are ignored and relative entries come from the global config dir", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({
        env: { AGENT_DISABLE_PROJECT_CONFIG: "1" },
        files: {
          ...monorepo,
          "project/rules.md": "project copy (ignored)",
          "home/.config/agent/rules.md": "global copy",
          "home/.config/agent/agent.json": { instructions: ["rules.md"] }
        }
      })
      expect(yield* loader.system()).toEqual([`Instructions from: ${box.path("home/.config/agent/rules.md")}\nglobal copy`])
      expect(yield* loader.forRead({ scope: "m", filePath: box.path("project/packages/app/src/index.ts") })).toBeUndefined()
    }))
})

describe("InstructionLoader global file", () => {
  it.scopedLive("the config dir's AGENTS.md comes first, and wins over ~/.claude/CLAUDE.md", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({
        files: {
          "home/.config/agent/AGENTS.md": "global agents",
          "home/.claude/CLAUDE.md": "global claude",
          "project/AGENTS.md": "project"
        }
      })
      expect(yield* loader.system()).toEqual([
        `Instructions from: ${box.path("home/.config/agent/AGENTS.md")}\nglobal agents`,
        `Instructions from: ${box.path("project/AGENTS.md")}\nproject`
      ])
    }))

  it.scopedLive("~/.claude/CLAUDE.md is used when the config dir has no AGENTS.md", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: { "home/.claude/CLAUDE.md": "global claude" } })
      expect(yield* loader.system()).toEqual([`Instructions from: ${box.path("home/.claude/CLAUDE.md")}\nglobal claude`])
    }))
})

describe("InstructionLoader instructions config", () => {
  it.scopedLive("globs, absolute and ~/ paths, then URLs; dead URLs are logged and skipped", () =>
    Effect.gen(function*() {
      const server = yield* serve({ "/team.md": "Team rules from the web." })
      const dead = yield* deadUrl
      const missing = server.url("/gone.md")
      const { box, loader, logs } = yield* loaderFor({
        files: {
          "project/AGENTS.md": "project",
          "project/docs/a.md": "doc a",
          "project/docs/b.md": "doc b",
          "project/docs/notes.txt": "not markdown",
          "project/docs/deep/c.md": "deep doc (not matched by docs/*.md)",
          "project/rules/x/style.md": "style via **",
          "home/notes/personal.md": "personal notes",
          "elsewhere/abs.md": "absolute file"
        }
      }, (box) =>
        box.write("project/agent.json", {
          instructions: [
            server.url("/team.md"),
            "docs/*.md",
            "rules/**/*.md",
            dead,
            missing,
            "~/notes/personal.md",
            box.path("elsewhere/abs.md"),
            "AGENTS.md"
          ]
        }))
      const system = yield* loader.system()
      expect(sources(system)).toEqual([
        box.path("project/AGENTS.md"),
        box.path("project/docs/a.md"),
        box.path("project/docs/b.md"),
        box.path("project/rules/x/style.md"),
        box.path("home/notes/personal.md"),
        box.path("elsewhere/abs.md"),
        server.url("/team.md")
      ])
      expect(system.at(-1)).toBe(`Instructions from: ${server.url("/team.md")}\nTeam rules from the web.`)
      expect(yield* loader.files()).toEqual(sources(system).slice(0, -1))
      expect(yield* loader.sources()).toEqual([
        ...sources(system).slice(0, -1).map((source) => ({ source, kind: "file" })),
        { source: server.url("/team.md"), kind: "url" }
      ])
      expect(logs.filter((line) => line.includes(dead))).toHaveLength(1)
      expect(logs.find((line) => line.includes(missing))).toMatch(/HTTP 404/)
      // Failed URLs are not retried every step.
      yield* loader.system()
      expect(logs.filter((line) => line.includes(dead))).toHaveLength(1)
    }))

  it.scopedLive("a fetched URL is kept by its loader, not by the process: each runtime fetches its own", () =>
    Effect.gen(function*() {
      const { first, url } = yield* Effect.scoped(
        Effect.gen(function*() {
          const server = yield* serve({ "/cached.md": "cached rules" })
          const url = server.url("/cached.md")
          const first = yield* loaderFor({ files: { "project/agent.json": { instructions: [url] } } })
          expect(yield* first.loader.system()).toEqual([`Instructions from: ${url}\ncached rules`])
          return { first, url }
        })
      )
      // The server is closed now; nothing answers on that port. The first loader keeps what it fetched.
      expect(yield* first.loader.system()).toEqual([`Instructions from: ${url}\ncached rules`])
      const second = yield* loaderFor({ files: { "project/agent.json": { instructions: [url] } } })
      expect(yield* second.loader.system()).toEqual([])
      expect(second.logs.find((line) => line.includes(url))).toMatch(/cannot fetch/)
    }))

  it.scopedLive("a URL that never answers is given up after 5 s", () =>
    Effect.gen(function*() {
      const server = yield* serve({}, ["/slow.md"])
      const url = server.url("/slow.md")
      const { box, loader, logs } = yield* loaderFor({
        files: { "project/AGENTS.md": "project", "project/agent.json": { instructions: [url] } }
      })
      const started = Date.now()
      const system = yield* loader.system()
      const elapsed = Date.now() - started
      expect(sources(system)).toEqual([box.path("project/AGENTS.md")])
      expect(elapsed).toBeGreaterThan(3_500)
      expect(elapsed).toBeLessThan(8_000)
      expect(logs.find((line) => line.includes(url))).toMatch(/no answer within 5 s/)
    }), { timeout: 20_000 })
})

describe("InstructionLoader.forRead", () => {
  it.scopedLive("attaches the package's instruction files once per scope (session), again once released", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: monorepo })
      const first = yield* loader.forRead({ scope: "ses_1", filePath: box.path("project/packages/app/src/index.ts") })
      expect(first?.reminder).toBe(
        [
          "<system-reminder>",
          `Instructions from: ${box.path("project/packages/app/AGENTS.md")}`,
          "App rules: React only.",
          "",
          `Instructions from: ${box.path("project/packages/AGENTS.md")}`,
          "Packages rules: every package has tests.",
          "</system-reminder>"
        ].join("\n")
      )
      expect(first?.files).toEqual([box.path("project/packages/app/AGENTS.md"), box.path("project/packages/AGENTS.md")])
      // Same session: already attached.
      expect(yield* loader.forRead({ scope: "ses_1", filePath: box.path("project/packages/app/src/util.ts") }))
        .toBeUndefined()
      // A sibling package: only what it adds (nothing — packages/AGENTS.md is claimed).
      expect(yield* loader.forRead({ scope: "ses_1", filePath: box.path("project/packages/lib/src/index.ts") }))
        .toBeUndefined()
      expect(yield* loader.attached("ses_1")).toEqual(first?.files)
      // Another session gets them too.
      const other = yield* loader.forRead({ scope: "ses_2", filePath: "packages/app/src/util.ts" })
      expect(other?.reminder).toContain(`Instructions from: ${box.path("project/packages/app/AGENTS.md")}`)
      // Once the read result that carried a file leaves the model's view, the next read brings it again.
      yield* loader.release({ scope: "ses_1", files: [box.path("project/packages/app/AGENTS.md")] })
      expect(yield* loader.attached("ses_1")).toEqual([box.path("project/packages/AGENTS.md")])
      const again = yield* loader.forRead({ scope: "ses_1", filePath: box.path("project/packages/app/src/util.ts") })
      expect(again?.files).toEqual([box.path("project/packages/app/AGENTS.md")])
    }))

  it.scopedLive("never attaches files already in the system prompt, the read file itself, or anything for files outside the project", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: { ...monorepo, "outside/AGENTS.md": "outside", "outside/x.ts": "" } })
      // The root AGENTS.md is in the system prompt.
      expect(yield* loader.forRead({ scope: "m", filePath: box.path("project/README.md") })).toBeUndefined()
      // Reading an AGENTS.md does not attach that same file, only its parent directories' files.
      const self = yield* loader.forRead({ scope: "m2", filePath: box.path("project/packages/app/AGENTS.md") })
      expect(self?.reminder).not.toContain(box.path("project/packages/app/AGENTS.md"))
      expect(self?.reminder).toContain(box.path("project/packages/AGENTS.md"))
      expect(yield* loader.forRead({ scope: "m3", filePath: box.path("outside/x.ts") })).toBeUndefined()
    }))

  it.scopedLive("a package with only CLAUDE.md attaches that file", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: monorepo })
      const text = yield* loader.forRead({ scope: "m", filePath: box.path("project/packages/tools/main.ts") })
      expect(text?.reminder).toContain(`Instructions from: ${box.path("project/packages/tools/CLAUDE.md")}\nTools package rules from CLAUDE.md.`)
    }))

  it.scopedLive("concurrent reads in one message attach a file only once", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: monorepo })
      const results = yield* Effect.all(
        ["index.ts", "util.ts", "index.ts", "util.ts"].map((name) =>
          loader.forRead({ scope: "m", filePath: box.path(`project/packages/app/src/${name}`) })
        ),
        { concurrency: "unbounded" }
      )
      const attached = results.filter((result) => result !== undefined)
      expect(attached).toHaveLength(1)
    }))
})

describe("InstructionLoader caching", () => {
  it.scopedLive("files are re-read only when their mtime or size changes", () =>
    Effect.gen(function*() {
      const { box, loader } = yield* loaderFor({ files: { "project/AGENTS.md": "version one" } })
      const file = box.path("project/AGENTS.md")
      expect(yield* loader.system()).toEqual([`Instructions from: ${file}\nversion one`])

      // A different size: re-read. (A whole-second mtime, so it can be restored exactly below.)
      const stamp = 1_700_000_000
      fs.writeFileSync(file, "version two, longer")
      fs.utimesSync(file, stamp, stamp)
      expect(yield* loader.system()).toEqual([`Instructions from: ${file}\nversion two, longer`])

      // Same size and the same mtime: the cached text is kept (proof that nothing was re-read).
      fs.writeFileSync(file, "VERSION TWO, LONGER")
      fs.utimesSync(file, stamp, stamp)
      expect(yield* loader.system()).toEqual([`Instructions from: ${file}\nversion two, longer`])

      // A new mtime: re-read.
      fs.utimesSync(file, stamp, stamp + 5)
      expect(yield* loader.system()).toEqual([`Instructions from: ${file}\nVERSION TWO, LONGER`])

      // A file added during the session appears at the next step; a deleted one disappears.
      box.write("project/sub/.keep", "")
      fs.rmSync(file)
      expect(yield* loader.system()).toEqual([])
      expect(yield* loader.files()).toEqual([])
      box.write("project/AGENTS.md", "back again")
      expect(yield* loader.system()).toEqual([`Instructions from: ${file}\nback again`])
    }))
})
