// What `agent run --agent <name>` runs. As in OpenCode, a subagent (or an internal, hidden agent)
// named there runs as the default agent instead, with a note on stderr saying so; an unknown name
// is a usage error (OpenCode falls back there too, which hides typos from scripts).
import { type Agent, AgentNotFound } from "@agent/domain"

type AgentInfo = Pick<Agent, "name" | "mode" | "hidden">

export interface AgentChoice {
  /** The agent to ask for; `undefined` lets the runtime take the session's or the default agent. */
  readonly agent: string | undefined
  /** Said on stderr before the run, when the choice is not what was typed. */
  readonly note?: string
}

const isRunnable = (agent: Pick<Agent, "mode" | "hidden">) => agent.mode !== "subagent" && !agent.hidden

/** Whether `wanted` can run as asked: yes, an unknown agent, or why the default agent runs instead. */
export const checkAgent = (
  wanted: string,
  agents: ReadonlyArray<AgentInfo>
): { readonly runs: true } | { readonly runs: false; readonly why: string } | AgentNotFound => {
  const agent = agents.find((candidate) => candidate.name === wanted)
  if (!agent) return new AgentNotFound({ name: wanted, available: agents.filter(isRunnable).map((candidate) => candidate.name) })
  if (isRunnable(agent)) return { runs: true }
  return { runs: false, why: `agent "${wanted}" is ${agent.mode === "subagent" ? "a subagent" : "an internal agent"}, not a primary agent` }
}

/** The note for running `fallback` (the default agent) instead of what was typed. */
export const fallbackChoice = (why: string, fallback: string, agents: ReadonlyArray<AgentInfo>): AgentChoice => ({
  agent: fallback,
  note: `${why}; running the default agent "${fallback}" instead (primary agents: ${
    agents.filter(isRunnable).map((agent) => agent.name).join(", ")
  })`
})
