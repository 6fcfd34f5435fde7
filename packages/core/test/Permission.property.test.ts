import { DeniedError, type PermissionRule, type PermissionRuleset, type SessionID } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeAgentRegistry } from "../src/agent/AgentRegistry.js"
import { ApprovalStore } from "../src/permission/ApprovalStore.js"
import { Bus } from "../src/runtime/Bus.js"
import { ConfigService, loadConfig } from "../src/config/ConfigService.js"
import { Instance, makeInstanceInfo } from "../src/runtime/Instance.js"
import * as Permission from "../src/permission/Permission.js"
import { PermissionPolicy } from "../src/permission/PermissionPolicy.js"
import { PermissionService } from "../src/permission/PermissionService.js"

// A reference model written from the documented semantics, sharing no code with the engine:
// a dynamic-programming glob matcher and a forward scan that remembers the last match.
const globMatches = (input: string, pattern: string): boolean => {
  const text = input.replaceAll("\\", "/")
  const glob = pattern.replaceAll("\\", "/")
  const table: Array<Array<boolean>> = Array.from({ length: glob.length + 1 }, () =>
    Array<boolean>(text.length + 1).fill(false))
  table[0]![0] = true
  for (let p = 1; p <= glob.length; p++) {
    const token = glob[p - 1]
    for (let t = 0; t <= text.length; t++) {
      if (token === "*") table[p]![t] = table[p - 1]![t]! || (t > 0 && table[p]![t - 1]!)
      else if (t > 0) table[p]![t] = table[p - 1]![t - 1]! && (token === "?" || token === text[t - 1])
    }
  }
  return table[glob.length]![text.length]!
}

const referenceMatch = (input: string, pattern: string): boolean =>
  globMatches(input, pattern) || (pattern.endsWith(" *") && globMatches(input, pattern.slice(0, -2)))

const referenceEvaluate = (permission: string, pattern: string, rules: ReadonlyArray<PermissionRule>) => {
  let action: PermissionRule["action"] = "ask"
  for (const rule of rules) {
    if (referenceMatch(permission, rule.permission) && referenceMatch(pattern, rule.pattern)) action = rule.action
  }
  return action
}

const alphabet = fc.constantFrom("a", "b", "/", "\\", ".", " ", "-", "\n", "(", "+", "$")
const word = fc.string({ unit: alphabet, maxLength: 6 })
const patternPiece = fc.oneof(alphabet, fc.constantFrom("*", "?", "**", " *"))
const pattern = fc.oneof(
  fc.array(patternPiece, { maxLength: 6 }).map((pieces) => pieces.join("")),
  fc.constant("*")
)
const permissionName = fc.constantFrom("bash", "edit", "read", "github_search", "github_issue")
const permissionPattern = fc.oneof(permissionName, fc.constantFrom("*", "github_*", "b?sh", "e*"))
const action = fc.constantFrom("allow" as const, "deny" as const, "ask" as const)
const ruleArb = fc.record({ permission: permissionPattern, pattern, action })
const rulesetArb = fc.array(ruleArb, { maxLength: 8 })

describe("Permission.evaluate against a reference model", () => {
  it("agrees on random rulesets and inputs", () => {
    fc.assert(
      fc.property(fc.array(rulesetArb, { maxLength: 3 }), permissionName, word, (rulesets, permission, input) => {
        const expected = referenceEvaluate(permission, input, rulesets.flat())
        expect(Permission.evaluate(permission, input, ...rulesets).action).toBe(expected)
      }),
      { numRuns: 3000 }
    )
  })

  it("agrees on matching for inputs built from the pattern itself", () => {
    fc.assert(
      fc.property(pattern, word, (glob, filler) => {
        const input = glob.replaceAll("*", filler).replaceAll("?", "a")
        const rules: PermissionRuleset = [{ permission: "bash", pattern: glob, action: "deny" }]
        expect(Permission.evaluate("bash", input, rules).action).toBe(referenceEvaluate("bash", input, rules))
      }),
      { numRuns: 2000 }
    )
  })
})

describe("managed policy", () => {
  const sessionID = "ses_00000000000000000000000000" as SessionID
  const instance = makeInstanceInfo({ directory: "/tmp", home: "/tmp/home", env: {} })

  it.live("a policy deny is never overridden by agent, session or approved rules", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          rulesetArb,
          rulesetArb,
          fc.array(fc.record({ permission: permissionPattern, pattern, action: fc.constant("allow" as const) }), {
            maxLength: 4
          }),
          permissionName,
          word,
          (agentAndSession, policyExtra, approvals, permission, input) => {
            const policyRules: PermissionRuleset = [...policyExtra, { permission, pattern: input, action: "deny" }]
            const approvalStore = Layer.succeed(ApprovalStore, {
              load: () => Effect.succeed(approvals),
              add: () => Effect.void,
              location: () => "memory"
            })
            const layer = PermissionService.layer.pipe(
              Layer.provide(
                Layer.mergeAll(Bus.layer, approvalStore, PermissionPolicy.make({ rules: policyRules }), Layer.succeed(Instance, instance))
              )
            )
            return Effect.gen(function*() {
              const permissions = yield* PermissionService
              const error = yield* Effect.flip(
                permissions.ask({ sessionID, permission, patterns: [input], always: [input], ruleset: agentAndSession })
              )
              expect(error).toBeInstanceOf(DeniedError)
            }).pipe(Effect.provide(layer), Effect.scoped, Effect.runPromise)
          }
        ),
        { numRuns: 300 }
      )
    ))

  // The same property through the real files: a deny in the managed dir, against whatever the user
  // writes in the project config (per-agent rules and legacy tools included), AGENT_PERMISSION,
  // session rules and stored approvals.
  const actionOrMap = fc.oneof(action, fc.dictionary(pattern, action, { maxKeys: 3 }))
  const permissionConfig = fc.oneof(action, fc.dictionary(permissionPattern, actionOrMap, { maxKeys: 4 }))
  const toolsConfig = fc.dictionary(fc.constantFrom("bash", "edit", "write", "webfetch", "github_search"), fc.boolean(), {
    maxKeys: 3
  })

  it.live("a managed-file deny is never overridden by project config, AGENT_PERMISSION, session or approvals", () =>
    Effect.gen(function*() {
      const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "agent-policy-property-")))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
      const project = path.join(root, "project")
      fs.mkdirSync(path.join(project, ".git"), { recursive: true })
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(
            permissionConfig,
            toolsConfig,
            permissionConfig,
            fc.option(permissionConfig, { nil: undefined }),
            rulesetArb,
            fc.array(fc.record({ permission: permissionPattern, pattern, action: fc.constant("allow" as const) }), {
              maxLength: 4
            }),
            permissionName,
            word,
            (user, tools, perAgent, env, session, approvals, permission, input) => {
              fs.writeFileSync(
                path.join(project, "agent.json"),
                JSON.stringify({ permission: user, tools, agent: { build: { permission: perAgent } } })
              )
              fs.mkdirSync(path.join(root, "managed"), { recursive: true })
              fs.writeFileSync(path.join(root, "managed", "agent.json"), JSON.stringify({ permission: { [permission]: { [input]: "deny" } } }))
              const instance = makeInstanceInfo({
                directory: project,
                home: path.join(root, "home"),
                env: {
                  XDG_CONFIG_HOME: path.join(root, "home", ".config"),
                  XDG_DATA_HOME: path.join(root, "home", ".local", "share"),
                  AGENT_MANAGED_DIR: path.join(root, "managed"),
                  ...(env === undefined ? {} : { AGENT_PERMISSION: JSON.stringify(env) })
                }
              })
              return Effect.gen(function*() {
                const info = yield* loadConfig(instance)
                const build = yield* makeAgentRegistry(instance, info).get("build")
                const layer = PermissionService.layer.pipe(
                  Layer.provide(PermissionPolicy.layer),
                  Layer.provide(
                    Layer.mergeAll(
                      Bus.layer,
                      Layer.succeed(ApprovalStore, { load: () => Effect.succeed(approvals), add: () => Effect.void, location: () => "memory" }),
                      ConfigService.layerFromInfo(info),
                      Layer.succeed(Instance, instance)
                    )
                  )
                )
                const error = yield* Effect.flip(
                  Effect.flatMap(PermissionService, (permissions) =>
                    permissions.ask({
                      sessionID,
                      permission,
                      patterns: [input],
                      always: [input],
                      ruleset: Permission.merge(build.permission, session)
                    })).pipe(Effect.provide(layer))
                )
                expect(error).toBeInstanceOf(DeniedError)
              }).pipe(Effect.scoped, Effect.runPromise)
            }
          ),
          { numRuns: 150 }
        )
      )
    }).pipe(Effect.scoped))
})
