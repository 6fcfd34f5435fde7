/**
 * Keyboard shortcuts outside text fields: `/` search, `g` sessions, `a` approvals, `t` theme,
 * `j`/`k` move between the rows of a list (`[data-nav]` elements), Enter opens the focused one.
 */
import { toggleTheme } from "./Theme.js"

export interface KeyActions {
  readonly navigate: (path: string) => void
  readonly focusSearch: () => void
}

const typing = (target: EventTarget | null) =>
  target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))

const moveFocus = (step: number) => {
  const rows = [...document.querySelectorAll<HTMLElement>("[data-nav]")]
  if (rows.length === 0) return
  const at = rows.indexOf(document.activeElement as HTMLElement)
  const next = rows[Math.max(0, Math.min(rows.length - 1, at < 0 ? 0 : at + step))]!
  next.focus()
  next.scrollIntoView({ block: "nearest" })
}

export const onKey = (event: KeyboardEvent, actions: KeyActions) => {
  if (event.metaKey || event.ctrlKey || event.altKey || typing(event.target)) return
  const action: Record<string, () => void> = {
    "/": actions.focusSearch,
    g: () => actions.navigate("/"),
    a: () => actions.navigate("/approvals"),
    t: () => void toggleTheme(),
    j: () => moveFocus(1),
    k: () => moveFocus(-1)
  }
  const run = action[event.key]
  if (run) {
    event.preventDefault()
    run()
  }
}
