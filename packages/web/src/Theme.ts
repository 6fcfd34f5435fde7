/** Light or dark: the person's choice (kept in localStorage), else the system's. */
export type Theme = "light" | "dark"

const KEY = "agent-theme"

export const initialTheme = (): Theme => {
  const saved = localStorage.getItem(KEY)
  if (saved === "light" || saved === "dark") return saved
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"
}

export const toggleTheme = (): Theme => {
  const next: Theme = document.documentElement.dataset["theme"] === "dark" ? "light" : "dark"
  document.documentElement.dataset["theme"] = next
  localStorage.setItem(KEY, next)
  return next
}
