/**
 * The server's HTTP API as the page calls it: same origin, credentials by the login cookie (or
 * the browser's Basic auth). `x-agent-client: web` asks the server not to answer 401 with a Basic
 * challenge (the browser's dialog), so a lapsed login can send the page to the login form.
 */

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

const HEADERS = { "x-agent-client": "web" }

/** The server's error shape is `{name, data: {message}}`; anything else is said as is. */
const errorMessage = async (response: Response): Promise<string> => {
  const text = await response.text()
  try {
    const body = JSON.parse(text) as { data?: { message?: unknown }; message?: unknown }
    const message = body.data?.message ?? body.message
    if (typeof message === "string") return message
  } catch {
    // not JSON
  }
  return text || `${response.status} ${response.statusText}`
}

export const request = async <A>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<A> => {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? HEADERS : { ...HEADERS, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(signal ? { signal } : {})
  })
  if (response.status === 401) {
    location.assign(`/login?next=${encodeURIComponent(location.pathname)}`)
    throw new ApiError(401, "logged out")
  }
  if (!response.ok) throw new ApiError(response.status, await errorMessage(response))
  if (response.status === 204) return undefined as A
  const text = await response.text()
  return (text === "" ? undefined : JSON.parse(text)) as A
}

export const get = <A>(path: string, signal?: AbortSignal) => request<A>("GET", path, undefined, signal)
export const post = <A>(path: string, body?: unknown) => request<A>("POST", path, body ?? {})

export const eventStream = (lastEventId: number | undefined, signal: AbortSignal) =>
  fetch("/event", {
    headers: { ...HEADERS, accept: "text/event-stream", ...(lastEventId !== undefined ? { "last-event-id": String(lastEventId) } : {}) },
    cache: "no-store",
    signal
  })
