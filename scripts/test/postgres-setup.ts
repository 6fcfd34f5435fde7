// vitest global setup: the tests' PostgreSQL. With AGENT_TEST_DATABASE_URL set, that server is used;
// else, where PostgreSQL is installed, a throwaway one is started (scripts/test/postgres.mjs) and
// stopped after the run. Without either, the Postgres store tests fail in CI (CI=true) and are
// reported as not run elsewhere (packages/testing/src/TestDatabase.ts): never skipped silently.
import { findBinDir, start, stop } from "./postgres.mjs"

export default async function setup() {
  if (process.env.AGENT_TEST_DATABASE_URL) return
  if (!findBinDir()) {
    const message = "PostgreSQL is not installed (initdb/pg_ctl): the Postgres store tests cannot run; apt-get install postgresql, or set AGENT_TEST_DATABASE_URL"
    if (process.env.CI) throw new Error(message)
    console.warn(`\n!! ${message}\n`)
    return
  }
  const { url, dir } = await start()
  process.env.AGENT_TEST_DATABASE_URL = url
  return () => {
    delete process.env.AGENT_TEST_DATABASE_URL
    stop(dir)
  }
}
