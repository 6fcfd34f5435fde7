/**
 * The web page under load, in real Chromium: an event stream cut mid-answer resumes with
 * Last-Event-ID (nothing missed, nothing twice, no reload), and a session of 2 000 parts scrolls
 * with few rows in the page (frame times are measured and printed, not asserted).
 */
import { Identifier, SessionStore } from "@agent/core"
import type { Message, MessageID, Part, PartID, SessionID } from "@agent/domain"
import { ScriptedModel } from "@agent/testing"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Browser } from "playwright-core"
import { docsDir, launch, relay, serve, until } from "./browser.js"

const { text, delay } = ScriptedModel

interface Shared {
  readonly browser: Browser
  readonly model: ScriptedModel
  readonly served: Effect.Effect.Success<ReturnType<typeof serve>>
  readonly relay: Effect.Effect.Success<ReturnType<typeof relay>>
}

const scope = Effect.runSync(Scope.make())
let shared: Shared

beforeAll(async () => {
  const model = ScriptedModel.make([])
  shared = await Effect.runPromise(
    Effect.gen(function*() {
      const browser = yield* launch()
      // No password here (the login is Page.test.ts's); the relay reaches the server under another port.
      const served = yield* serve({ model, server: { allowedHosts: ["127.0.0.1"] } })
      return { browser, model, served, relay: yield* relay(served.port) }
    }).pipe(Scope.extend(scope))
  )
}, 60_000)

afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const api = async <A>(method: string, route: string, body?: unknown): Promise<A> => {
  const response = await fetch(`${shared.served.url}${route}`, {
    method,
    ...(body !== undefined ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {})
  })
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`)
  return (response.status === 204 ? undefined : await response.json()) as A
}

const CHUNKS = Array.from({ length: 20 }, (_, index) => `chunk-${String(index + 1).padStart(2, "0")}`)

/** A long session written straight to the store: one prompt, then assistant messages of text and tool parts. */
const longSession = (parts: number) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const session = yield* store.create({ title: `A session of ${parts} parts` })
    const sessionID = session.id as SessionID
    const userID = Identifier.ascending("message") as MessageID
    const now = Date.now()
    yield* store.upsertMessage({ id: userID, sessionID, role: "user", time: { created: now }, agent: "build", model: { providerID: "test", modelID: "scripted" } } as Message)
    yield* store.upsertPart({ id: Identifier.ascending("part") as PartID, sessionID, messageID: userID, type: "text", text: "Walk me through the repository." } as Part)
    const perMessage = 50
    for (let start = 0; start < parts; start += perMessage) {
      const messageID = Identifier.ascending("message") as MessageID
      yield* store.upsertMessage({
        id: messageID, sessionID, role: "assistant", time: { created: now, completed: now }, parentID: userID,
        providerID: "test", modelID: "scripted", agent: "build", mode: "build", path: { cwd: "/", root: "/" }, cost: 0,
        tokens: { input: 10, output: 10, reasoning: 0, cache: { read: 0, write: 0 } }, finish: "tool-calls"
      } as Message)
      for (let index = start; index < Math.min(parts, start + perMessage); index++) {
        const id = Identifier.ascending("part") as PartID
        const part = index % 2 === 0
          ? { id, sessionID, messageID, type: "text", text: `Part **${index}**: a paragraph with \`code\`, a [link](https://example.com) and a list:\n\n- one\n- two` }
          : {
            id, sessionID, messageID, type: "tool", callID: `call_${index}`, tool: "bash",
            state: {
              status: "completed", input: { command: `ls dir${index}` }, title: `ls dir${index}`, metadata: {},
              output: Array.from({ length: index % 5 === 1 ? 40 : 3 }, (_, line) => `file-${index}-${line}`).join("\n"),
              time: { start: now, end: now + 12 }
            }
          }
        yield* store.upsertPart(part as Part)
      }
    }
    yield* store.flush()
    return sessionID
  })

describe("the web page under load", () => {
  it("a connection cut mid-answer resumes with Last-Event-ID: every part once, in order, without a reload", async () => {
    const { browser, model, relay: proxy } = shared
    const page = await browser.newPage()
    const session = await api<{ id: string }>("POST", "/session", { title: "Streaming through a relay" })
    const requests: Array<{ path: string; lastEventId?: string }> = []
    page.on("request", (request) => {
      const url = new URL(request.url())
      const lastEventId = request.headers()["last-event-id"]
      requests.push({ path: `${url.pathname}${url.search}`, ...(lastEventId !== undefined ? { lastEventId } : {}) })
    })
    await page.goto(`${proxy.url}/sessions/${session.id}`)
    await page.getByTestId("connection").filter({ hasText: "live" }).waitFor()
    await page.getByText("Streaming through a relay").first().waitFor()
    model.push(CHUNKS.flatMap((chunk) => [text(chunk), delay(120)]))
    await api("POST", `/session/${session.id}/prompt_async`, { parts: [{ type: "text", text: "count slowly" }] })
    await page.locator(".markdown", { hasText: "chunk-05" }).waitFor()
    const seen = Number(await page.getByTestId("connection").getAttribute("data-last-event"))
    const loadsBefore = requests.filter((request) => request.path.startsWith("/session?")).length
    expect(proxy.cut()).toBeGreaterThan(0)
    await page.locator(".markdown", { hasText: "chunk-20" }).waitFor({ timeout: 20_000 })
    await until(async () => ((await api<Record<string, { type: string }>>("GET", "/session/status"))[session.id]?.type ?? "idle") === "idle" || undefined)
    const resumed = requests.filter((request) => request.path === "/event" && request.lastEventId !== undefined)
    expect(resumed.length).toBeGreaterThan(0)
    expect(Number(resumed[0]!.lastEventId)).toBeGreaterThanOrEqual(seen)
    // Resumed from the server's replay: the page did not load the sessions again.
    expect(requests.filter((request) => request.path.startsWith("/session?")).length).toBe(loadsBefore)
    expect((await page.locator(".markdown").allTextContents()).map((chunk) => chunk.trim())).toEqual(CHUNKS)
    await page.close()
  }, 60_000)

  it("a 2 000-part session keeps a few rows in the page and scrolls (frame times printed)", async () => {
    const { browser, served } = shared
    const sessionID = await served.run(longSession(2000))
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    const started = Date.now()
    await page.goto(`${served.url}/sessions/${sessionID}`)
    await page.locator(".markdown", { hasText: "Part 1998" }).waitFor()
    const openedMs = Date.now() - started
    const rows = await page.locator(".vrow").count()
    expect(rows).toBeGreaterThan(0)
    expect(rows).toBeLessThan(120)
    // Scroll from the top to the end in about 200 frames, and time each frame.
    const frames = await page.evaluate(async () => {
      const list = document.querySelector<HTMLElement>(".vlist")!
      list.scrollTop = 0
      await new Promise((resolve) => requestAnimationFrame(resolve))
      const times: Array<number> = []
      let last = performance.now()
      while (list.scrollTop + list.clientHeight < list.scrollHeight - 2) {
        list.scrollTop += Math.max(400, list.scrollHeight / 200)
        await new Promise((resolve) => requestAnimationFrame(resolve))
        const now = performance.now()
        times.push(now - last)
        last = now
      }
      return times
    })
    const sorted = [...frames].sort((a, b) => a - b)
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1)
    const report = {
      parts: 2000,
      openedMs,
      rowsInPage: rows,
      frames: frames.length,
      p50ms: Number(at(0.5)),
      p95ms: Number(at(0.95)),
      maxMs: Number(sorted.at(-1)!.toFixed(1)),
      over50ms: frames.filter((time) => time > 50).length
    }
    console.log(`2000-part session: ${JSON.stringify(report)}`)
    fs.mkdirSync(docsDir, { recursive: true })
    fs.writeFileSync(path.join(docsDir, "scroll.json"), JSON.stringify(report, null, 2) + "\n")
    expect(frames.length).toBeGreaterThan(10)
    // The end of the list is the end of the session, and the rows in the page stayed few while scrolling.
    await page.locator(".markdown", { hasText: "Part 1998" }).waitFor()
    expect(await page.locator(".vrow").count()).toBeLessThan(120)
    await page.close()
  }, 90_000)

  it("sessions list, and dark theme on a narrow screen (screenshots)", async () => {
    const { browser, served } = shared
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    await page.goto(`${served.url}/`)
    await page.getByRole("link", { name: /A session of 2000 parts/ }).waitFor()
    await page.getByRole("searchbox", { name: "Search sessions by title" }).fill("relay")
    await until(async () => ((await page.locator(".session-row").count()) === 1 ? true : undefined), 5_000, "search narrows the list")
    expect(await page.locator(".session-row .title").allTextContents()).toEqual(["Streaming through a relay"])
    await page.getByRole("searchbox", { name: "Search sessions by title" }).fill("")
    // Keyboard: j moves to the first row, Enter opens it.
    await page.locator("body").click({ position: { x: 5, y: 300 } })
    await page.keyboard.press("j")
    await page.screenshot({ path: path.join(docsDir, "sessions.png") })
    await page.keyboard.press("Enter")
    await page.waitForURL(/\/sessions\/ses_/)
    const narrow = await browser.newPage({ viewport: { width: 390, height: 844 }, colorScheme: "dark" })
    await narrow.goto(page.url())
    await narrow.locator(".vrow").first().waitFor()
    expect(await narrow.evaluate(() => document.documentElement.dataset["theme"])).toBe("dark")
    // Readable on a phone: nothing wider than the screen.
    expect(await narrow.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await narrow.screenshot({ path: path.join(docsDir, "narrow-dark.png") })
    await narrow.close()
    await page.close()
  }, 60_000)
})
