// The one-time trust question's pure parts (shown and decided here; asked in TrustPrompt.ts).
import type { ListedHook } from "@agent/core/hooks/Hooks"
import { table } from "./Format.js"

/** The hooks held only because the project is not trusted (not those `disableAllHooks` turns off). */
export const heldForTrust = (hooks: ReadonlyArray<ListedHook>, trusted: boolean, disabled: boolean): ReadonlyArray<ListedHook> =>
  trusted || disabled ? [] : hooks.filter((hook) => hook.scope === "project" && !hook.runs)

/** The question as shown: the project, each held hook (event, matcher, command, file), what "y" does. */
export const trustQuestion = (project: string, hooks: ReadonlyArray<ListedHook>): string =>
  [
    `This project (${project}) brings ${hooks.length === 1 ? "a hook" : `${hooks.length} hooks`}: commands the agent would run on this machine.`,
    table([["EVENT", "MATCHER", "COMMAND", "FILE"], ...hooks.map((hook) => [hook.event, hook.matcher ?? "*", hook.command, hook.file])])
      .split("\n").map((line) => `  ${line}`).join("\n"),
    `Trust ${project} and run its hooks from now on (as \`agent trust\`; \`agent trust --revoke\` undoes it)? [y/N] `
  ].join("\n")

/** Only a yes trusts: Enter, anything else and the end of input (Ctrl-D) leave the project untrusted. */
export const parseTrustAnswer = (answer: string | undefined): boolean => {
  const word = (answer ?? "").trim().toLowerCase()
  return word === "y" || word === "yes"
}
