import { fileURLToPath } from "node:url"
import { defineWorkspace } from "vitest/config"

// Tests import the packages' sources, so a test run never sees a stale dist/.
const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url))
const alias = {
  "@agent/domain": src("domain"),
  "@agent/core": src("core"),
  "@agent/testing": src("testing")
}

// The tests' PostgreSQL (the Postgres store tests): started once for the run, shared by the projects.
const postgresSetup = fileURLToPath(new URL("./scripts/test/postgres-setup.ts", import.meta.url))

export default defineWorkspace(
  ["domain", "core", "testing", "cli", "server", "acp", "web"].map((name) => ({
    resolve: { alias },
    test: {
      name,
      root: `./packages/${name}`,
      include: ["test/**/*.test.ts"],
      globalSetup: [postgresSetup],
      // Test files share a worker's module graph: evaluating @agent/core's sources once per
      // worker instead of once per file saves minutes of "collect" time. Tests build their
      // runtimes from layers, so nothing leaks between files through module state.
      isolate: false,
      testTimeout: 30_000,
      hookTimeout: 30_000
    }
  }))
)
