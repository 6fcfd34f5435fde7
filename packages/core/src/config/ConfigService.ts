import { ConfigError } from "@agent/domain"
import type { Config } from "@agent/domain"
import { Context, Effect, Layer } from "effect"
import { Instance, type InstanceInfo } from "../runtime/Instance.js"
import { type ConfigInfo, describeWarning } from "./ConfigInfo.js"
import { load } from "./ConfigLoader.js"

// The ConfigService: its Tag and layers. Loading lives beside it: ConfigLoader (the layers of files,
// in order), ConfigFiles (reading, discovery), ConfigJson and ConfigMarkdown (parsing sources),
// ConfigSubstitution ({env:} and {file:}), ConfigMerge (merging with provenance), ConfigPostProcess.

export { describeWarning }
export type { ConfigInfo, ConfigWarning, ManagedPermission } from "./ConfigInfo.js"
export { isEnvFlag } from "./ConfigFiles.js"

export class ConfigService extends Context.Tag("@agent/core/ConfigService")<
  ConfigService,
  {
    readonly get: () => Effect.Effect<Config>
    readonly info: () => Effect.Effect<ConfigInfo>
  }
>() {
  /** Loads the configuration of the current `Instance` once, when the layer is built; its warnings are logged. */
  static readonly layer: Layer.Layer<ConfigService, ConfigError, Instance> = Layer.effect(
    ConfigService,
    Effect.gen(function*() {
      const instance = yield* Instance
      const info = yield* loadConfig(instance)
      for (const warning of info.warnings) yield* Effect.logWarning(describeWarning(warning))
      return makeService(info)
    })
  )

  /** A service over an already loaded (or hand-made) configuration. */
  static readonly layerFromInfo = (info: ConfigInfo): Layer.Layer<ConfigService> =>
    Layer.succeed(ConfigService, makeService(info))
}

const makeService = (info: ConfigInfo): Context.Tag.Service<ConfigService> => ({
  get: Effect.fn("ConfigService.get")(function*() {
    return info.config
  }),
  info: Effect.fn("ConfigService.info")(function*() {
    return info
  })
})

/**
 * Loads, merges and decodes every configuration layer of `instance`, lowest precedence first:
 * global dir, `AGENT_CONFIG`, project files (worktree root down to the directory), config dirs
 * (global, then `.opencode/` and `.agent/` root down, with their markdown agents, modes and
 * commands), `AGENT_CONFIG_CONTENT`, `AGENT_PERMISSION`, managed dir.
 */
export const loadConfig = (instance: InstanceInfo): Effect.Effect<ConfigInfo, ConfigError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(load(instance))
    } catch (error) {
      return error instanceof ConfigError ? Effect.fail(error) : Effect.die(error)
    }
  }).pipe(Effect.withSpan("ConfigService.load"))
