import { Effect } from "effect"
import type * as McpSdk from "./McpSdk.js"

let loaded: typeof McpSdk | undefined
let loading: Promise<typeof McpSdk> | undefined

/** Loads the MCP SDK once; later calls are free. */
export const load: Effect.Effect<typeof McpSdk> = Effect.suspend(() =>
  loaded
    ? Effect.succeed(loaded)
    : Effect.promise(() => (loading ??= import("./McpSdk.js").then((sdk) => (loaded = sdk))))
)

/** The SDK, for code that only runs after `load` (a connection exists, so it was loaded). */
export const sdk = (): typeof McpSdk => {
  if (!loaded) throw new Error("the MCP SDK is used before it was loaded")
  return loaded
}

/** The SDK if something loaded it already (error classification of SDK errors needs no load). */
export const ifLoaded = (): typeof McpSdk | undefined => loaded
