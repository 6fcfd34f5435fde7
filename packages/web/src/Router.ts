/** Path routing for the page's views; the server answers the page's HTML for each of these paths (server/src/Web.ts). */
import { signal } from "@preact/signals"

export type View =
  | { readonly name: "sessions" }
  | { readonly name: "session"; readonly id: string; readonly tab: "transcript" | "changes" }
  | { readonly name: "approvals" }
  | { readonly name: "permission"; readonly id: string }
  | { readonly name: "missing"; readonly path: string }

export const viewOf = (pathname: string): View => {
  if (pathname === "/" || pathname === "/sessions") return { name: "sessions" }
  if (pathname === "/approvals") return { name: "approvals" }
  const session = /^\/sessions\/([\w-]+)(\/changes)?$/.exec(pathname)
  if (session) return { name: "session", id: session[1]!, tab: session[2] ? "changes" : "transcript" }
  const permission = /^\/permission\/([\w-]+)$/.exec(pathname)
  if (permission) return { name: "permission", id: permission[1]! }
  return { name: "missing", path: pathname }
}

export const path = signal(location.pathname)

export const navigate = (to: string) => {
  if (to === location.pathname) return
  history.pushState(null, "", to)
  path.value = location.pathname
}

addEventListener("popstate", () => (path.value = location.pathname))

/** A plain link that moves within the page (a modified click still opens a tab). */
export const onLinkClick = (event: MouseEvent) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  const anchor = (event.target as Element | null)?.closest("a")
  const href = anchor?.getAttribute("href")
  if (!anchor || !href || !href.startsWith("/") || anchor.target === "_blank") return
  event.preventDefault()
  navigate(href)
}
