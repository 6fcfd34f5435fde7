import { describe, expect, it } from "@effect/vitest"
import * as Database from "../../src/store/Database.js"
import * as Migrations from "../../src/store/Migrations.js"

describe("migrations", () => {
  it("every SQLite migration has a PostgreSQL twin under the same id and name, and the other way round", () => {
    expect(Object.keys(Migrations.postgres)).toEqual(Object.keys(Migrations.sqlite))
    expect(Migrations.latestKnown).toBe(Math.max(...Object.keys(Migrations.postgres).map((key) => Number.parseInt(key, 10))))
  })
})

describe("where the store is", () => {
  const instance = (env: Record<string, string>) => ({ env, paths: { data: "/data" } })
  it.each([
    { env: {}, config: undefined, expected: "/data/agent.db" },
    { env: {}, config: "postgres://h/db", expected: "postgres://h/db" },
    { env: { AGENT_DB: "/x.db" }, config: "postgres://h/db", expected: "/x.db" },
    { env: { AGENT_DATABASE_URL: "postgres://env/db" }, config: "postgres://h/db", expected: "postgres://env/db" },
    { env: { AGENT_DATABASE_URL: "postgres://env/db", AGENT_DB: "/x.db" }, config: undefined, expected: "postgres://env/db" },
    { env: { AGENT_DATABASE_URL: "  " }, config: "  ", expected: "/data/agent.db" }
  ])("env $env, config $config → $expected", ({ config, env, expected }) => {
    expect(Database.target(instance(env), config)).toBe(expected)
  })
})
