import { ApprovalStore, type Bus, Database, Instance, makeAppLayer, type PermissionPolicy, type Sandbox, type Tool } from "@agent/core"
import type { LanguageModelV3 } from "@ai-sdk/provider"
import { Effect, Layer } from "effect"
import * as FakeLLM from "./FakeLLM.js"
import { ScriptedModel } from "./ScriptedModel.js"
import * as TestDatabase from "./TestDatabase.js"
import * as TestInstance from "./TestInstance.js"

export interface TestRuntimeOptions extends TestInstance.TestInstanceOptions {
  /** The scripted (or recorded) model every agent talks to. */
  readonly model: LanguageModelV3
  /** Extra model info (limits, cost) for the fake model. */
  readonly modelInfo?: Parameters<typeof FakeLLM.layer>[1]
  readonly fakeOptions?: Parameters<typeof FakeLLM.layer>[2]
  readonly tools?: ReadonlyArray<Tool.AnyTool>
  readonly policy?: Layer.Layer<PermissionPolicy>
  /** The sandbox backend (default: `Sandbox.layer`, as the CLI has it); given the sandbox dir, e.g. for its temp dirs. */
  readonly sandbox?: (box: TestInstance.Sandbox) => Layer.Layer<Sandbox, never, Instance | Bus>
  /** Keep the database in a file in the sandbox (default: in memory). */
  readonly fileDatabase?: boolean
  /** `"postgres"`: the database is a fresh schema on the tests' PostgreSQL server (TestDatabase). */
  readonly backend?: TestDatabase.Backend
  /** A database to open instead (a PostgreSQL URL or a file): runtimes given the same one share it, as replicas do. */
  readonly database?: string
  /**
   * The small model that names sessions (default: one that always answers "Test session",
   * so title generation never eats the scripted model's turns).
   */
  readonly titleModel?: LanguageModelV3
}

/** Answers every call with the same title. */
export const titleModel = (title = "Test session"): LanguageModelV3 =>
  ScriptedModel.make(Array.from({ length: 10_000 }, () => title), { modelID: "title" })

/**
 * The whole runtime, built by the same composition root as the CLI and the server, over a
 * sandbox and a fake model. A test needs `Effect.provide(yield* TestRuntime.make({ model }))`.
 */
export const make = (options: TestRuntimeOptions) =>
  Effect.gen(function*() {
    const box = yield* TestInstance.sandbox(options)
    const database = options.database !== undefined
      ? { database: Database.layerTarget(options.database) }
      : options.backend === "postgres"
      ? { database: Database.layerTarget(yield* TestDatabase.freshPostgres) }
      : options.fileDatabase
      ? {}
      : { database: Database.layerMemory, approvals: ApprovalStore.layerSql }
    const layer = makeAppLayer({
      instance: Layer.succeed(Instance, box.instance),
      providers: FakeLLM.layerModels(
        { "test/scripted": options.model, "test/small": options.titleModel ?? titleModel() },
        {
          defaultModel: "test/scripted",
          smallModel: "test/small",
          ...options.fakeOptions,
          ...(options.modelInfo ? { info: { "test/scripted": options.modelInfo } } : {})
        }
      ),
      ...database,
      ...(options.tools ? { tools: options.tools } : {}),
      ...(options.policy ? { policy: options.policy } : {}),
      ...(options.sandbox ? { sandbox: options.sandbox(box) } : {})
    })
    return { box, layer }
  })

export type TestRuntime = Effect.Effect.Success<ReturnType<typeof make>>
