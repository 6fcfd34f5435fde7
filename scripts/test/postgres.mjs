// A throwaway PostgreSQL server for the tests: initdb into a temp dir, start on a free loopback
// port, hand back its URL, and remove it all on stop. Used by the vitest global setup
// (scripts/test/postgres-setup.ts) and by hand:
//   node scripts/test/postgres.mjs start   → prints `export AGENT_TEST_DATABASE_URL=...` and the dir
//   node scripts/test/postgres.mjs stop <dir>
// initdb refuses to run as root: as root the server runs as the `postgres` user (Debian's
// package makes it) or, when there is none, as a system user this script creates.
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** The directory holding initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<newest>/bin. */
export const findBinDir = () => {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"))) return dir
  }
  const root = "/usr/lib/postgresql"
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a)) : []
  for (const version of versions) {
    const dir = path.join(root, version, "bin")
    if (fs.existsSync(path.join(dir, "initdb"))) return dir
  }
  return undefined
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

const userExists = (name) => spawnSync("id", ["-u", name], { stdio: "ignore" }).status === 0

/** Who runs the server: this user, or (as root) an unprivileged one. */
const serverUser = () => {
  if (process.getuid?.() !== 0) return undefined
  if (userExists("postgres")) return "postgres"
  if (!userExists("agent-pg")) execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "agent-pg"])
  return "agent-pg"
}

const run = (user, command, args) => {
  const [file, argv] = user ? ["runuser", ["-u", user, "--", command, ...args]] : [command, args]
  const result = spawnSync(file, argv, { encoding: "utf8" })
  if (result.status !== 0) {
    throw new Error(`${path.basename(command)} failed (exit ${result.status}): ${(result.stderr || result.stdout || String(result.error)).trim()}`)
  }
  return result.stdout
}

/** The test server's password: nothing to hide, it listens on loopback for the length of a test run. */
const PASSWORD = "agent-test"

/** Starts a server; returns its URL (database `postgres`, user `agent`) and its directory. */
export const start = async () => {
  const bin = findBinDir()
  if (!bin) throw new Error("PostgreSQL is not installed (no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin); apt-get install postgresql")
  const user = serverUser()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-pg-"))
  if (user) execFileSync("chown", [user, dir])
  const data = path.join(dir, "data")
  // TCP connections need the password (so a test can see a wrong one refused); the socket is trusted.
  const pwfile = path.join(dir, "password")
  fs.writeFileSync(pwfile, `${PASSWORD}\n`)
  if (user) execFileSync("chown", [user, pwfile])
  run(user, path.join(bin, "initdb"), [
    "-D", data, "-U", "agent", "--pwfile", pwfile, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"
  ])
  const port = await freePort()
  // Durability is worth nothing in a throwaway server; the tests' many small commits are faster without it.
  const options = [
    `-p ${port}`, "-c listen_addresses=127.0.0.1", `-k ${dir}`, "-c fsync=off", "-c synchronous_commit=off",
    "-c full_page_writes=off", "-c max_connections=300"
  ].join(" ")
  run(user, path.join(bin, "pg_ctl"), ["-D", data, "-o", options, "-l", path.join(dir, "server.log"), "-w", "-t", "60", "start"])
  return { url: `postgres://agent:${PASSWORD}@127.0.0.1:${port}/postgres`, dir }
}

/** Stops the server started in `dir` (at once: nothing in it is kept) and removes the directory. */
export const stop = (dir) => {
  const bin = findBinDir()
  const data = path.join(dir, "data")
  if (bin && fs.existsSync(path.join(data, "postmaster.pid"))) {
    try {
      run(serverUser(), path.join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"])
    } catch (error) {
      console.error(String(error))
    }
  }
  fs.rmSync(dir, { recursive: true, force: true })
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const [command, dir] = process.argv.slice(2)
  if (command === "start") {
    const started = await start()
    console.log(`export AGENT_TEST_DATABASE_URL=${started.url}`)
    console.log(`# stop with: node scripts/test/postgres.mjs stop ${started.dir}`)
  } else if (command === "stop" && dir) {
    stop(dir)
  } else {
    console.error("usage: postgres.mjs start | stop <dir>")
    process.exit(2)
  }
}
