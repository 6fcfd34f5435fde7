import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"

export type Shell = "bash" | "zsh" | "fish"

const shell = Args.choice<Shell>([["bash", "bash"], ["zsh", "zsh"], ["fish", "fish"]], { name: "shell" }).pipe(
  Args.withDescription("bash, zsh or fish")
)

export const completion = Command.make("completion", { shell }, (input) =>
  Effect.gen(function*() {
    // The command tree includes this command, so it is loaded when needed, not imported.
    const { completionScript } = yield* Effect.promise(() => import("./Cli.js"))
    yield* Console.log((yield* completionScript(input.shell)).join("\n"))
  })).pipe(
    Command.withDescription(
      "Print a shell completion script: source <(agent completion bash), agent completion zsh > ~/.zfunc/_agent, " +
        "agent completion fish > ~/.config/fish/completions/agent.fish"
    )
  )
