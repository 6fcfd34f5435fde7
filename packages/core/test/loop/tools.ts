import { Effect, Schema } from "effect"
import { spawn } from "node:child_process"
import * as Tool from "../../src/tool/Tool.js"

/** Tools the loop tests use: small, real, and observable from outside. */

export const echo = Tool.make({
  id: "echo",
  description: "Repeats the given text.",
  parameters: Schema.Struct({ text: Schema.String.annotations({ description: "What to repeat" }) }),
  execute: (params) => Effect.succeed({ title: `echo ${params.text}`, output: params.text })
})

/** Asks `bash` permission for the command, then "runs" it. */
export const guarded = Tool.make({
  id: "bash",
  description: "Runs a shell command (pretend).",
  parameters: Schema.Struct({ command: Schema.String }),
  execute: (params, context) =>
    context.ask({ permission: "bash", patterns: [params.command], always: [`${params.command.split(" ")[0]} *`] }).pipe(
      Effect.as({ title: params.command, output: `ran ${params.command}` })
    )
})

/** Starts a real `sleep` process and waits for it; records its pid so a test can check it died. */
export const pids: Array<number> = []
export const sleeper = Tool.make({
  id: "sleeper",
  description: "Sleeps in a child process.",
  parameters: Schema.Struct({ seconds: Schema.Number }),
  execute: (params, context) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const child = spawn("sleep", [String(params.seconds)], { stdio: "ignore" })
        pids.push(child.pid!)
        return child
      }),
      (child) =>
        Effect.zipRight(
          context.metadata({ title: `sleeping ${params.seconds}s`, metadata: { pid: child.pid } }),
          Effect.async<{ title: string; output: string }>((resume) => {
            child.on("exit", () => resume(Effect.succeed({ title: "slept", output: "done" })))
          })
        ),
      (child) => Effect.sync(() => void (child.exitCode === null && child.kill("SIGKILL")))
    )
})

/** Prints a lot of output. */
export const flood = Tool.make({
  id: "flood",
  description: "Prints many lines.",
  parameters: Schema.Struct({ lines: Schema.Number }),
  execute: (params) =>
    Effect.succeed({
      title: "flood",
      output: Array.from({ length: params.lines }, (_, index) => `line ${index + 1}`).join("\n")
    })
})

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Asks `read` for the path, then returns pretend content. */
export const peek = Tool.make({
  id: "read",
  description: "Reads a file (pretend).",
  parameters: Schema.Struct({ filePath: Schema.String }),
  execute: (params, context) =>
    context.ask({ permission: "read", patterns: [params.filePath], always: ["*"] }).pipe(
      Effect.as({ title: params.filePath, output: `contents of ${params.filePath}` })
    )
})
