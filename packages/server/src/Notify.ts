// `notify`: webhooks told of a run's permission asks, its end and its limit stops (of `agent run`, or
// of the sessions `agent serve` runs: ServeApprovals.ts). Each post runs
// on its own fiber with retries and backoff: it never delays or fails the run; at the end the run
// gives the posts still going a short grace, then leaves them (docs/configuration.md, "notify").
import type { NotifyConfig, NotifyEvent, NotifyTarget, PermissionRequest } from "@agent/domain"
import { Console, Duration, Effect, FiberSet, Schedule, type Scope } from "effect"
import { summaryOf } from "./ApproverSettings.js"

/** What a notification says; the fields a template may name as `{{field}}`. */
export interface Notification {
  readonly event: NotifyEvent
  readonly title: string
  readonly message: string
  readonly session: string
  readonly directory: string
  readonly [field: string]: string | number | undefined
}

interface Target {
  readonly url: string
  readonly events: ReadonlySet<NotifyEvent> | undefined
  readonly template: string | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly retries: number
}

/** The first wait between attempts, doubled each time. */
const FIRST_DELAY = Duration.millis(500)
const DEFAULT_RETRIES = 3
/** One attempt may take this long. */
const ATTEMPT_TIMEOUT = Duration.seconds(10)
/** How long the end of a run waits for the posts still going. */
export const NOTIFY_GRACE = Duration.seconds(5)

const targetOf = (entry: NotifyTarget): Target =>
  typeof entry === "string"
    ? { url: entry, events: undefined, template: undefined, headers: {}, retries: DEFAULT_RETRIES }
    : {
      url: entry.url,
      events: entry.events ? new Set(entry.events) : undefined,
      template: entry.template,
      headers: entry.headers ?? {},
      retries: entry.retries ?? DEFAULT_RETRIES
    }

/**
 * `{{field}}` replaced by the notification's field (empty when it has none). In a JSON template
 * the values are escaped as the inside of a JSON string.
 */
/** A template that starts with `{` (not a `{{field}}`) or `[` is JSON. */
const isJsonTemplate = (template: string) => /^\s*(\{(?!\{)|\[)/.test(template)

export const renderTemplate = (template: string, notification: Notification): string => {
  const json = isJsonTemplate(template)
  return template.replace(/\{\{\s*([a-zA-Z_]+)\s*\}\}/g, (_, field: string) => {
    const value = notification[field]
    const text = value === undefined ? "" : String(value)
    return json ? JSON.stringify(text).slice(1, -1) : text
  })
}

export const bodyOf = (target: Pick<Target, "template">, notification: Notification) =>
  target.template === undefined
    ? { body: JSON.stringify(notification), contentType: "application/json" }
    : {
      body: renderTemplate(target.template, notification),
      contentType: isJsonTemplate(target.template) ? "application/json" : "text/plain; charset=utf-8"
    }

const post = (target: Target, notification: Notification) => {
  const { body, contentType } = bodyOf(target, notification)
  const headers = Object.fromEntries(Object.entries(target.headers).map(([name, value]) => [name, renderTemplate(value, notification)]))
  return Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(target.url, { method: "POST", headers: { "content-type": contentType, ...headers }, body, signal })
      await response.arrayBuffer()
      if (!response.ok) throw new Error(`${target.url} answered ${response.status}`)
    },
    catch: (error) => (error instanceof Error ? error : new Error(String(error)))
  }).pipe(
    Effect.timeoutFail({ duration: ATTEMPT_TIMEOUT, onTimeout: () => new Error(`${target.url} did not answer within 10 s`) }),
    Effect.retry(Schedule.exponential(FIRST_DELAY).pipe(Schedule.intersect(Schedule.recurs(target.retries)))),
    Effect.catchAll((error) => Console.error(`agent: notify: ${error.message} (gave up after ${target.retries + 1} attempts)`))
  )
}

export interface Notifier {
  /** Starts the posts for this notification and returns at once. */
  readonly send: (notification: Notification) => Effect.Effect<void>
  /** Waits for the posts still going, up to NOTIFY_GRACE. */
  readonly settle: Effect.Effect<void>
}

/** No `notify`: nothing is started, nothing is waited for. */
export const silent: Notifier = { send: () => Effect.void, settle: Effect.void }

/** A notifier whose posts live in the caller's scope (interrupted when it closes). */
export const makeNotifier = (config: NotifyConfig | undefined): Effect.Effect<Notifier, never, Scope.Scope> =>
  Effect.gen(function*() {
    const entries = config === undefined ? [] : Array.isArray(config) ? config : [config as NotifyTarget]
    if (entries.length === 0) return silent
    const targets = entries.map(targetOf)
    const posts = yield* FiberSet.make<void>()
    return {
      send: (notification) =>
        Effect.forEach(
          targets.filter((target) => target.events === undefined || target.events.has(notification.event)),
          (target) => FiberSet.run(posts, post(target, notification)),
          { discard: true }
        ),
      settle: FiberSet.awaitEmpty(posts).pipe(
        Effect.timeoutTo({
          duration: NOTIFY_GRACE,
          onSuccess: () => Effect.void,
          onTimeout: () => Console.error("agent: notify: some notifications were still being sent when the run ended; left unsent")
        }),
        Effect.flatten
      )
    } satisfies Notifier
  })

const base = (sessionID: string, directory: string) => ({ session: sessionID, directory })

export const askNotification = (request: PermissionRequest, directory: string): Notification => ({
  event: "permission.asked",
  ...base(request.sessionID, directory),
  title: `agent asks: ${request.permission}`,
  message: `Permission asked for ${summaryOf(request)}`,
  permission: request.permission,
  summary: summaryOf(request),
  request: request.id
})

/** A run's end; `exitCode` is `agent run`'s (a run on `agent serve` has none). */
export const endNotification = (
  sessionID: string,
  directory: string,
  outcome: { readonly reason: string; readonly exitCode?: number | undefined; readonly answer: string }
): Notification => {
  const exit = outcome.exitCode === undefined ? "" : ` (exit ${outcome.exitCode})`
  const limit = outcome.reason === "steps" || outcome.reason === "duration" || outcome.reason === "stall" || outcome.reason === "budget"
  return {
    event: limit ? "run.limit" : "run.finished",
    ...base(sessionID, directory),
    title: limit ? `agent run stopped: ${outcome.reason} limit` : `agent run ${outcome.reason}`,
    message: limit
      ? `The run stopped at its ${outcome.reason} limit${exit}.`
      : `The run ended: ${outcome.reason}${exit}.${outcome.answer ? ` ${outcome.answer.slice(0, 500)}` : ""}`,
    reason: outcome.reason,
    ...(outcome.exitCode === undefined ? {} : { exitCode: outcome.exitCode })
  }
}
