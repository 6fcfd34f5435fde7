/**
 * Web page benchmark: a real `agent serve` (the built bundle, with 50 sessions in its database)
 * and Debian's Chromium (playwright-core). Each run opens the page in a fresh browser context
 * (no cache) and reports what the first load transferred (compressed bodies and headers, the
 * event stream aside) and the time from navigation to the first frame that shows the session list.
 *
 * Run after `pnpm build`: `pnpm bench:web` (BENCH_WEB_RUNS, default 5). Targets (issue 27): first
 * load ≤ 250 KB compressed, first rendered session list ≤ 500 ms. Figures: docs/web.md.
 */
import { MockOpenAIServer } from "@agent/testing"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { chromium } from "playwright-core"
import { startServe } from "./ServeProcess.js"

const RUNS = Number(process.env.BENCH_WEB_RUNS ?? 5)
const CHROMIUM = process.env.AGENT_CHROMIUM ?? "/usr/bin/chromium"
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const program = Effect.gen(function*() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-bench-web-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
  const model = yield* MockOpenAIServer.start([])
  const served = yield* startServe(dir, model.url)
  for (let index = 0; index < 50; index++) {
    yield* Effect.promise(() =>
      fetch(`${served.url}/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: `Session ${index}` }) })
    )
  }
  const browser = yield* Effect.acquireRelease(
    Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })),
    (opened) => Effect.promise(() => opened.close())
  )
  const runs: Array<{ bytes: number; files: number; listMs: number }> = []
  for (let run = 0; run < RUNS; run++) {
    const result = yield* Effect.promise(async () => {
      const context = await browser.newContext()
      const page = await context.newPage()
      const responses: Array<Promise<number>> = []
      page.on("requestfinished", (request) => {
        if (new URL(request.url()).pathname === "/event") return
        responses.push(request.sizes().then((sizes) => sizes.responseBodySize + sizes.responseHeadersSize))
      })
      await page.goto(served.url, { waitUntil: "commit" })
      // performance.now() counts from the navigation's start; polled every animation frame.
      const listMs = await (await page.waitForFunction(
        () => (document.querySelectorAll(".session-row").length >= 50 ? performance.now() : false),
        undefined,
        { polling: "raf", timeout: 20_000 }
      )).jsonValue() as number
      await page.waitForLoadState("load")
      const sizes = await Promise.all(responses)
      await context.close()
      return { bytes: sizes.reduce((sum, size) => sum + size, 0), files: sizes.length, listMs }
    })
    runs.push(result)
    console.log(`run ${run + 1}: first load ${(result.bytes / 1024).toFixed(1)} KB in ${result.files} responses, session list at ${result.listMs.toFixed(0)} ms`)
  }
  const built = JSON.parse(fs.readFileSync(new URL("../../packages/web/dist/sizes.json", import.meta.url), "utf8")) as Record<string, { raw: number; br: number; gzip: number }>
  console.log(`\nbuilt assets (raw / brotli / gzip bytes): ${Object.entries(built).map(([file, size]) => `${file} ${size.raw}/${size.br}/${size.gzip}`).join(", ")}`)
  console.log(`first load: median ${(median(runs.map((run) => run.bytes)) / 1024).toFixed(1)} KB transferred (target ≤ 250 KB)`)
  console.log(`first rendered session list (50 sessions): median ${median(runs.map((run) => run.listMs)).toFixed(0)} ms, max ${Math.max(...runs.map((run) => run.listMs)).toFixed(0)} ms (target ≤ 500 ms)`)
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exit(1)
})
