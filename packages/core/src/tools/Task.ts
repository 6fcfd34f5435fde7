// The task tool: starts (or resumes) a subagent in a child session. It reaches the session loop
// through `SubagentPort` (the loop passes it in), so tools/ does not import session/.
import type { Agent } from "@agent/domain"
import { Effect, Schema } from "effect"
import * as Prompts from "../runtime/Prompts.js"
import * as Tool from "../tool/Tool.js"

export const TaskParams = Schema.Struct({
  description: Schema.String.annotations({ description: "A short (3-5 words) description of the task" }),
  prompt: Schema.String.annotations({ description: "The task for the agent to perform" }),
  subagent_type: Schema.String.annotations({ description: "The type of specialized agent to use for this task" }),
  task_id: Schema.optional(Schema.String).annotations({
    description: "Pass the id of an earlier task to continue that subagent session instead of starting a new one"
  }),
  command: Schema.optional(Schema.String).annotations({ description: "The command that triggered this task" })
})
export type TaskParams = typeof TaskParams.Type

/** What the task tool needs of the session loop. */
export interface SubagentPort {
  /** The subagents `agent` may start. */
  readonly available: (agent: Agent) => Effect.Effect<ReadonlyArray<Agent>>
  /** Runs (or resumes) the subagent the call names and returns its last answer. */
  readonly run: (params: TaskParams, context: Tool.ToolContext) => Effect.Effect<Tool.ToolResult, Tool.ToolFailure>
}

export const make = (port: SubagentPort): Tool.AnyTool =>
  Tool.make({
    id: "task",
    description: Prompts.read("tool/task.txt"),
    parameters: TaskParams,
    describe: (agent) =>
      Effect.map(port.available(agent), (list) =>
        [
          Prompts.read("tool/task.txt"),
          "",
          "Available agents:",
          ...list.map((candidate) => `- ${candidate.name}: ${candidate.description ?? "(no description)"}`)
        ].join("\n")),
    execute: (params, context) => port.run(params, context)
  })
