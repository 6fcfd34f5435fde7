/**
 * The web page in real Chromium against the real server (only the model is scripted): login,
 * prompting and streaming, approvals, reject with a message, changes and revert, a reconnect
 * mid-stream, and a long transcript. One browser and one server for the file; screenshots of the
 * main views go to docs/web/.
 */
import { MockOpenAIServer, ScriptedModel, TestInstance } from "@agent/testing"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { basic, docsDir, launch, serve, until } from "./browser.js"

const { text, toolCall, delay } = ScriptedModel
const PASSWORD = "correct horse"

interface Shared {
  readonly browser: Browser
  readonly context: BrowserContext
  readonly page: Page
  readonly model: ScriptedModel
  readonly served: Effect.Effect.Success<ReturnType<typeof serve>>
}

const scope = Effect.runSync(Scope.make())
let shared: Shared

beforeAll(async () => {
  const model = ScriptedModel.make([])
  shared = await Effect.runPromise(
    Effect.gen(function*() {
      const browser = yield* launch()
      const served = yield* serve({
        model,
        files: {
          "project/agent.json": { permission: { bash: "ask", edit: "allow" } },
          "project/notes.txt": "hello\n"
        },
        // The relay of the reconnect test reaches the server under another port.
        server: { password: PASSWORD, allowedHosts: ["127.0.0.1"] }
      })
      const context = yield* Effect.promise(() => browser.newContext({ viewport: { width: 1280, height: 800 } }))
      const page = yield* Effect.promise(() => context.newPage())
      // The page's own errors, in the test's output when something fails.
      page.on("pageerror", (error) => console.error(`page error: ${error.message}`))
      page.on("console", (message) => message.type() === "error" && console.error(`page console: ${message.text()}`))
      return { browser, context, page, model, served }
    }).pipe(Scope.extend(scope))
  )
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const shot = async (page: Page, name: string) => {
  fs.mkdirSync(docsDir, { recursive: true })
  await page.screenshot({ path: path.join(docsDir, `${name}.png`) })
}

/** The API as a headless client sees it: Basic auth, JSON. */
const api = async <A>(method: string, route: string, body?: unknown): Promise<A> => {
  const response = await fetch(`${shared.served.url}${route}`, {
    method,
    headers: { authorization: basic("agent", PASSWORD), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {})
  })
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`)
  return (response.status === 204 ? undefined : await response.json()) as A
}

const idle = (sessionID: string) =>
  until(async () => {
    const status = await api<Record<string, { type: string }>>("GET", "/session/status")
    return (status[sessionID]?.type ?? "idle") === "idle" ? true : undefined
  }, 20_000, `session ${sessionID} idle`)

/** Starts a session from the page's list view and returns its id (the page moves to it). */
const startFromPage = async (page: Page, prompt: string) => {
  await page.goto(`${shared.served.url}/`)
  await page.getByRole("textbox", { name: "Start a session" }).fill(prompt)
  await page.getByRole("button", { name: "Send" }).click()
  await page.waitForURL(/\/sessions\/ses_/)
  return new URL(page.url()).pathname.split("/")[2]!
}

describe("the web page", () => {
  it("asks for the password, then shows the session list", async () => {
    const { page, served } = shared
    await page.goto(`${served.url}/`)
    expect(new URL(page.url()).pathname).toBe("/login")
    await shot(page, "login")
    await page.getByLabel("Password").fill("wrong")
    await page.getByRole("button", { name: "Log in" }).click()
    await expect(page.getByRole("alert").textContent()).resolves.toContain("Wrong username or password.")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Log in" }).click()
    await page.waitForURL(`${served.url}/`)
    await page.getByTestId("connection").filter({ hasText: "live" }).waitFor()
    await page.getByTestId("session-list").waitFor({ state: "attached" })
    expect(await page.getByText("No sessions yet.").isVisible()).toBe(true)
  }, 60_000)

  it("starts a prompt with a chosen model; text and tool cards stream in", async () => {
    const { page, model } = shared
    model.push(
      [text("Reading the notes."), delay(200), toolCall("read", { filePath: "notes.txt" })],
      [delay(1500), text("The notes say **hello**.")]
    )
    await page.goto(`${shared.served.url}/`)
    await page.getByRole("textbox", { name: "Start a session" }).fill("what do the notes say?")
    await page.getByRole("combobox", { name: "Model" }).fill("test/scripted")
    await page.getByRole("button", { name: "Send" }).click()
    await page.waitForURL(/\/sessions\/ses_/)
    const card = page.locator('[data-testid="tool-card"][data-tool="read"]')
    await card.and(page.locator('[data-status="completed"]')).waitFor()
    // Live: the tool's card is done while the model still thinks about its answer.
    expect(await page.locator(".markdown", { hasText: "The notes say" }).count()).toBe(0)
    expect(await page.getByText("Reading the notes.").isVisible()).toBe(true)
    await page.locator(".markdown strong", { hasText: "hello" }).waitFor()
    await page.getByTestId("session-status").filter({ hasText: "idle" }).waitFor()
    expect(await card.textContent()).toContain("notes.txt")
    await card.getByText("Input").click()
    expect(await card.locator("pre").first().textContent()).toContain('"filePath": "notes.txt"')
    expect(model.calls.at(-1)?.kind).toBe("stream")
    await shot(page, "session")
  }, 60_000)

  it("a headless run waiting on an ask is approved with a click (also through /permission/<id>) and finishes", async () => {
    const { page, model } = shared
    model.push([toolCall("bash", { command: "echo approved-by-click", description: "Say it" })], "Built.")
    // A client without a person at it: it starts the run over the API and waits.
    const session = await api<{ id: string }>("POST", "/session", { title: "Headless build" })
    await api("POST", `/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: "build it" }] })
    await page.goto(`${shared.served.url}/approvals`)
    const card = page.getByTestId("permission")
    await card.waitFor()
    expect(await card.getByTestId("command").textContent()).toBe("echo approved-by-click")
    await until(async () => ((await page.title()) === "(1) agent" ? true : undefined), 5_000, "the count in the tab title")
    const where = (await api<{ approvals?: string }>("GET", "/path")).approvals!
    const rule = await card.getByTestId("always-rule").textContent()
    expect(rule).toContain("bash")
    expect(rule).toContain(where)
    await shot(page, "approvals")
    const id = await card.getAttribute("data-permission")
    await page.goto(`${shared.served.url}/permission/${id}`)
    await page.getByRole("button", { name: "Allow once" }).click()
    await page.getByTestId("ask-gone").waitFor()
    await idle(session.id)
    const messages = await api<ReadonlyArray<{ parts: ReadonlyArray<{ type: string; state?: { status: string; output?: string } }> }>>(
      "GET",
      `/session/${session.id}/message`
    )
    const tool = messages.flatMap((message) => message.parts).find((part) => part.type === "tool")
    expect(tool?.state).toMatchObject({ status: "completed" })
    expect(tool?.state?.output).toContain("approved-by-click")
    await until(async () => ((await page.title()) === "agent" ? true : undefined), 5_000, "the tab title without a count")
  }, 60_000)

  it("a pipeline's agent run --approver waits on the page; a click allows its command and the run finishes", async () => {
    const { page, served } = shared
    // Another project, its own model and database: the run posts its ask to this server and waits.
    const setup = Effect.gen(function*() {
      const runModel = yield* MockOpenAIServer.start([
        [toolCall("bash", { command: "echo from-the-pipeline", description: "Say it" })],
        "Pipeline done."
      ])
      const titles = yield* MockOpenAIServer.start(["A title", "A title"])
      const provider = (url: string, model: string) => ({ npm: "@ai-sdk/openai-compatible", options: { baseURL: url }, models: { [model]: {} } })
      return yield* TestInstance.sandbox({
        files: {
          "project/agent.json": {
            model: "mock/m",
            small_model: "titles/t",
            provider: { mock: provider(runModel.url, "m"), titles: provider(titles.url, "t") },
            permission: { bash: "ask" }
          }
        }
      })
    })
    const box = await Effect.runPromise(setup.pipe(Scope.extend(scope)))
    const bin = fileURLToPath(new URL("../../cli/dist/bundle/bin.js", import.meta.url))
    const child = spawn(process.execPath, [bin, "run", "--approver", served.url, "--format", "json", "say it"], {
      cwd: box.instance.directory,
      env: { ...box.instance.env, AGENT_SERVER_USERNAME: "agent", AGENT_SERVER_PASSWORD: PASSWORD } as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    try {
      await page.goto(`${served.url}/approvals`)
      const card = page.getByTestId("permission").filter({ hasText: "echo from-the-pipeline" })
      await card.waitFor({ timeout: 20_000 })
      const id = await card.getAttribute("data-permission")
      await page.goto(`${served.url}/permission/${id}`)
      await page.getByRole("button", { name: "Allow once" }).click()
      await page.getByTestId("ask-gone").waitFor()
      expect(await exited, stderr).toBe(0)
    } finally {
      child.kill("SIGKILL")
    }
    const events = stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string; part?: { state?: { status: string; output?: string } } } & Record<string, unknown>)
    const tool = events.find((event) => event.type === "tool_use")
    expect(tool?.part?.state).toMatchObject({ status: "completed" })
    expect(tool?.part?.state?.output).toContain("from-the-pipeline")
    expect(events.at(-1)).toMatchObject({ type: "result", status: "completed", exitCode: 0, text: "Pipeline done." })
  }, 60_000)

  it("reject with a message: the model reads it and goes on", async () => {
    const { page, model } = shared
    model.push([toolCall("bash", { command: "rm -rf build", description: "Clean" })], "Understood, I will leave build alone.")
    await startFromPage(page, "clean up")
    const card = page.getByTestId("permission")
    await card.waitFor()
    await card.getByRole("button", { name: "Reject with a message…" }).click()
    await card.getByLabel("Message for the model").fill("do not delete build; list it instead")
    await card.getByRole("button", { name: "Reject and tell the model" }).click()
    await page.getByText("Understood, I will leave build alone.").waitFor()
    expect(JSON.stringify(model.calls.at(-1)!.prompt)).toContain("do not delete build; list it instead")
    await page.locator('[data-testid="tool-card"][data-tool="bash"][data-status="error"]').waitFor()
  }, 60_000)

  it("shows a session's diff and reverts it, with the conflicting file left alone; unrevert puts it back", async () => {
    const { page, model, served } = shared
    const notes = served.box.path("project/notes.txt")
    const todo = served.box.path("project/todo.txt")
    model.push(
      [toolCall("edit", { filePath: "notes.txt", oldString: "hello", newString: "hello, world" }), toolCall("write", { filePath: "todo.txt", content: "one\ntwo\n" })],
      "Edited both."
    )
    const id = await startFromPage(page, "edit the notes and write a todo")
    await page.getByText("Edited both.").waitFor()
    expect(fs.readFileSync(notes, "utf8")).toBe("hello, world\n")
    await page.getByTestId("changes-tab").click()
    await page.waitForURL(`${served.url}/sessions/${id}/changes`)
    await page.getByRole("button", { name: /notes\.txt/ }).click()
    const diff = page.getByTestId("diff")
    await diff.waitFor()
    expect(await diff.locator(".code.add").allTextContents()).toEqual(["hello, world"])
    expect(await diff.locator(".code.del").allTextContents()).toEqual(["hello"])
    await page.getByRole("radio", { name: "Unified" }).click()
    expect(await diff.locator(".code.add").allTextContents()).toEqual(["+ hello, world"])
    await page.getByRole("radio", { name: "Split" }).click()
    await shot(page, "changes")
    // Someone changes todo.txt after the session did: revert must leave it alone.
    fs.writeFileSync(todo, "mine now\n")
    await page.getByRole("link", { name: "Transcript" }).click()
    await page.getByRole("button", { name: "Revert to here" }).first().click()
    const banner = page.getByTestId("revert-banner")
    await banner.waitFor()
    await banner.getByTestId("conflicts").getByText("todo.txt").waitFor()
    expect(fs.readFileSync(notes, "utf8")).toBe("hello\n")
    expect(fs.readFileSync(todo, "utf8")).toBe("mine now\n")
    await banner.getByRole("button", { name: "Unrevert" }).click()
    await banner.waitFor({ state: "detached" })
    expect(fs.readFileSync(notes, "utf8")).toBe("hello, world\n")
  }, 60_000)
})
