import { execFileSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/** Runs git in the user's repository, with the sandbox's home (no global config of the machine). */
export const userGit = (cwd: string, home: string, ...args: Array<string>): string =>
  execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: "1", LANG: "C" }
  })

/**
 * Makes `dir` a real repository with one commit, a stash entry, a staged file and hooks that
 * leave a marker if git ever runs them.
 */
export const makeUserRepo = (dir: string, home: string, files: Record<string, string>, marker: string) => {
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), content)
  }
  userGit(dir, home, "init", "-q", "-b", "main")
  userGit(dir, home, "config", "user.email", "user@example.com")
  userGit(dir, home, "config", "user.name", "User")
  userGit(dir, home, "add", "-A")
  userGit(dir, home, "commit", "-q", "-m", "initial")
  fs.appendFileSync(path.join(dir, "notes.md"), "work in progress\n")
  userGit(dir, home, "stash", "-q")
  fs.writeFileSync(path.join(dir, "staged.txt"), "staged by the user\n")
  userGit(dir, home, "add", "staged.txt")
  for (const hook of ["post-index-change", "post-checkout", "reference-transaction", "pre-commit", "post-commit"]) {
    const file = path.join(dir, ".git", "hooks", hook)
    fs.writeFileSync(file, `#!/bin/sh\necho ${hook} >> '${marker}'\n`)
    fs.chmodSync(file, 0o755)
  }
}

/** Every file under `.git` (path and bytes) plus what git says about index, stash and refs. */
export const repoFingerprint = (dir: string, home: string): string => {
  const hash = createHash("sha256")
  const walk = (current: string) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(current, entry.name)
      if (entry.isDirectory()) walk(full)
      else hash.update(`${path.relative(dir, full)}\0`).update(fs.readFileSync(full))
    }
  }
  walk(path.join(dir, ".git"))
  return [
    hash.digest("hex"),
    userGit(dir, home, "ls-files", "-s"),
    userGit(dir, home, "stash", "list"),
    userGit(dir, home, "for-each-ref")
  ].join("\n")
}

export interface FileState {
  readonly content: Buffer
  readonly executable: boolean
}

/** The bytes and executable bit of each listed file (undefined when absent). */
export const readState = (dir: string, files: ReadonlyArray<string>): Record<string, FileState | undefined> =>
  Object.fromEntries(
    files.map((file) => {
      const full = path.join(dir, file)
      if (!fs.existsSync(full)) return [file, undefined]
      return [file, { content: fs.readFileSync(full), executable: (fs.statSync(full).mode & 0o100) !== 0 }]
    })
  )

/** Runs git against the snapshot store (read-only questions in tests). */
export const storeGit = (gitDir: string, ...args: Array<string>): string =>
  execFileSync("git", [`--git-dir=${gitDir}`, ...args], {
    encoding: "utf8",
    env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" }
  })

export const hasObject = (gitDir: string, id: string): boolean => {
  try {
    storeGit(gitDir, "cat-file", "-e", id)
    return true
  } catch {
    return false
  }
}
