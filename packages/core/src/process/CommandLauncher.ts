/**
 * Starts shell commands through the launcher (LauncherProgram.ts) instead of from this process, so a
 * command costs a fork of a small process made ahead of time rather than a fork of the runtime
 * (docs/performance.md, "Command hooks"). Made by the layer that needs it, in its scope: nothing runs
 * until the first command; that command is started directly while the launcher comes up. A launcher
 * that dies is replaced at the next command; one that cannot start leaves direct starts for good.
 * Whatever the path, a command behaves as `runDirect`'s.
 */
import { Effect, type Scope } from "effect"
import { type CommandContext, type CommandOptions, type CommandResult, runDirect } from "./DirectCommand.js"
import { runHead } from "./LauncherProgram.js"
import { type LaunchedCommand, LauncherProcess } from "./LauncherProcess.js"

export interface CommandLauncher {
  readonly run: (command: string, input: string, options: CommandOptions) => Effect.Effect<CommandResult>
}

/** Where the launcher is: the state of one `CommandLauncher`. */
export type LauncherState =
  /** None yet, or the last one ended: the next command starts one. */
  | { readonly _tag: "Off" }
  | { readonly _tag: "Starting"; readonly launcher: LauncherProcess }
  | { readonly _tag: "Ready"; readonly launcher: LauncherProcess }
  /** One never came up: commands start directly from now on (`reported`: the warning was logged). */
  | { readonly _tag: "Unavailable"; readonly reason: string; readonly reported: boolean }
  | { readonly _tag: "Closed" }

/** How a command starts in a state: through the launcher, directly while one is started, or directly. */
export const routeOf = (state: LauncherState): "launcher" | "start-and-direct" | "direct" =>
  state._tag === "Ready" ? "launcher" : state._tag === "Off" ? "start-and-direct" : "direct"

export interface LauncherSettings extends CommandContext {
  /** Shells kept started ahead (the most commands that run at once). */
  readonly warm: number
}

const definedEnv = (env: Readonly<Record<string, string | undefined>>): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value
  return out
}

export const make = (settings: LauncherSettings): Effect.Effect<CommandLauncher, never, Scope.Scope> =>
  Effect.gen(function*() {
    const context = { cwd: settings.cwd, env: definedEnv(settings.env), warm: Math.max(1, settings.warm) }
    const holder: { state: LauncherState } = { state: { _tag: "Off" } }

    const start = () => {
      const launcher: LauncherProcess = new LauncherProcess(context, (reason) => {
        const current = holder.state
        if (current._tag === "Closed" || !("launcher" in current) || current.launcher !== launcher) return
        // One that was up is replaced at the next command; one that never came up is not tried again.
        holder.state = current._tag === "Ready" ? { _tag: "Off" } : { _tag: "Unavailable", reason, reported: false }
      })
      holder.state = { _tag: "Starting", launcher }
      void launcher.ready.then(() => {
        if (holder.state._tag === "Starting" && holder.state.launcher === launcher) holder.state = { _tag: "Ready", launcher }
      }, () => {})
    }

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        const current = holder.state
        holder.state = { _tag: "Closed" }
        if (current._tag === "Starting" || current._tag === "Ready") current.launcher.close()
      })
    )

    const viaLauncher = (launcher: LauncherProcess, command: string, input: string, options: CommandOptions) =>
      Effect.async<CommandResult>((resume) => {
        let settled = false
        const finish = (result: Effect.Effect<CommandResult>) => {
          if (settled) return
          settled = true
          clearTimeout(timer)
          resume(result)
        }
        let launched: LaunchedCommand | undefined
        const timer = setTimeout(() => {
          launched?.kill()
          finish(Effect.succeed({ _tag: "TimedOut" }))
        }, options.timeoutMs)
        launched = launcher.run({ head: runHead(command), input, maxOutput: options.maxOutput }, {
          exit: (code, signal, stdout, stderr) => finish(Effect.succeed({ _tag: "Exited", code, signal, stdout, stderr })),
          error: (message) => finish(Effect.succeed({ _tag: "Failed", error: message })),
          // Not started: it runs directly; started: it cannot be followed any more (its group was killed).
          lost: (started) =>
            finish(started
              ? Effect.succeed({ _tag: "Failed", error: "the command launcher ended while the command ran" })
              : runDirect(command, input, settings, options))
        })
        return Effect.sync(() => {
          clearTimeout(timer)
          launched?.kill()
        })
      })

    const run = (command: string, input: string, options: CommandOptions): Effect.Effect<CommandResult> =>
      Effect.suspend(() => {
        const state = holder.state
        const route = routeOf(state)
        if (route === "launcher" && state._tag === "Ready") return viaLauncher(state.launcher, command, input, options)
        if (route === "start-and-direct") start()
        const direct = runDirect(command, input, settings, options)
        if (state._tag === "Unavailable" && !state.reported) {
          holder.state = { ...state, reported: true }
          return Effect.logWarning(`commands start from the runtime itself: the command launcher did not start (${state.reason})`).pipe(
            Effect.zipRight(direct)
          )
        }
        return direct
      })

    return { run }
  })
