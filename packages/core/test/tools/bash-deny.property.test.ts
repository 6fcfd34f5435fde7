import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import * as Permission from "../../src/permission/Permission.js"
import { parseCommand } from "../../src/tool/BashParse.js"

/**
 * For generated compositions of a denied command inside bash's grammar (spellings, wrappers,
 * chains, pipes, groups, substitutions, scripts given as text or on standard input, each
 * nested in the others), the deny of `rm *` holds: some pattern the bash tool asks for is
 * denied, as PermissionService decides it.
 */
const rules = Permission.fromConfig({ "*": "allow", bash: { "*": "allow", "rm *": "deny" } })

const deniedBy = (command: string) =>
  Effect.map(parseCommand(command), (parsed) => {
    const unreadable = new Set(parsed.opaque.map((entry) => entry.text))
    return parsed.patterns.some((pattern) =>
      (unreadable.has(pattern) ? Permission.evaluateOpaque("bash", pattern, rules) : Permission.evaluate("bash", pattern, rules)).action === "deny"
    )
  })

const NAMES = [
  "rm", "'rm'", "\"rm\"", "\\rm", "r''m", "r\"\"m", "$'\\x72m'", "$'\\162m'", "$'\\u0072m'", "$\"rm\"", "/bin/rm",
  "/usr/bin/../bin/rm", "//bin/rm", "\"/bin/\"rm", "r\\\nm", "$R", "${R}", "\"$R\"", "$(echo rm)", "${X:-rm}", "/bin/r?",
  "/usr/bin/[r]m", "{r,}m", "rm${IFS}"
]
const ARGS = ["-rf victim", "victim", "-- victim", "'victim'", "\"$HOME/victim\"", "-f ./victim"]
const WRAPPERS = [
  "", "sudo ", "sudo -u root ", "env ", "env -i ", "env X=1 ", "/usr/bin/env - ", "nohup ", "nice -n 5 ", "nice --adjustment=5 ",
  "nice -5 ", "timeout 5 ", "timeout --signal KILL 5 ", "timeout -k 1 5 ", "command ", "exec ", "time ", "stdbuf -o0 ",
  "setsid ", "ionice -c 3 ", "taskset 1 ", "chrt -o 0 ", "flock /tmp/l ", "unshare -r ", "chroot / ", "watch -x ", "X=1 ",
  "xargs -0 ", "coproc ", "busybox ", "strace -f "
]

const singleQuoted = (script: string) => `'${script.replaceAll("'", "'\\''")}'`
const doubleQuoted = (script: string) => `"${script.replace(/[\\"$`]/g, "\\$&")}"`

/** Ways to place a script S inside a larger one. */
const COMPOSERS: ReadonlyArray<(script: string) => string> = [
  (s) => `ls && ${s}`,
  (s) => `${s} || true`,
  (s) => `echo a | ${s}`,
  (s) => `${s} | cat`,
  (s) => `( ${s} )`,
  (s) => `{ ${s}; }`,
  (s) => `echo $( ${s} )`,
  (s) => `x=$( ${s} ); echo "$x"`,
  (s) => `cat <( ${s} )`,
  (s) => `if true; then ${s}; fi`,
  (s) => `for i in 1; do ${s}; done`,
  (s) => `while true; do ${s}; break; done`,
  (s) => `f() { ${s}; }; f`,
  (s) => `${s} > out.txt 2>&1`,
  (s) => `${s} & wait`,
  (s) => `bash -c ${singleQuoted(s)}`,
  (s) => `sh -c ${doubleQuoted(s)}`,
  (s) => `bash -c -- ${singleQuoted(s)}`,
  (s) => `eval ${singleQuoted(s)}`,
  (s) => `eval ${doubleQuoted(s)}`,
  (s) => `trap ${singleQuoted(s)} EXIT`,
  (s) => `bash <<< ${singleQuoted(s)}`,
  // Each level its own delimiter, as a heredoc inside a heredoc needs.
  (s) => `bash <<'E${s.length}'\n${s}\nE${s.length}`,
  (s) => `. /dev/stdin <<< ${singleQuoted(s)}`,
  (s) => `su -c ${singleQuoted(s)}`,
  (s) => `script -qc ${singleQuoted(s)} /dev/null`,
  (s) => `watch ${singleQuoted(s)}`,
  (s) => `env -S ${singleQuoted(s)}`
]

const compositionOf = (names: ReadonlyArray<string>) =>
  fc
    .record({
      name: fc.constantFrom(...names),
      args: fc.constantFrom(...ARGS),
      wrappers: fc.array(fc.constantFrom(...WRAPPERS), { maxLength: 3 }),
      composers: fc.array(fc.integer({ min: 0, max: COMPOSERS.length - 1 }), { maxLength: 3 })
    })
    .map(({ args, composers, name, wrappers }) => {
      let script = `${wrappers.join("")}${name} ${args}`
      composers.forEach((index, depth) => {
        // `env -S` splits words without a shell's grammar: it only holds a simple command.
        const plain = /^[\w\s/.=-]+$/.test(script)
        const composer = index === COMPOSERS.length - 1 && (depth > 0 || !plain) ? COMPOSERS[0]! : COMPOSERS[index]!
        script = composer(script)
      })
      return /\$R|\$\{R\}/.test(name) ? `R=rm; ${script}` : script
    })

/**
 * `ls`, spelled the ways the names above spell `rm`, where the name can be read. (`\ls` is left
 * out: tree-sitter-bash cannot read a heredoc whose body starts with a backslash, and what it
 * cannot read is decided strictly, so there it would be denied too.)
 */
const HARMLESS = ["ls", "'ls'", "\"ls\"", "l''s", "$'\\x6cs'", "$'\\154s'", "/bin/ls", "/usr/bin/../bin/ls", "\"/bin/\"ls", "l\\\ns"]

describe("bash deny rules: a property over bash's grammar", () => {
  it.live("every generated composition of `rm` is denied by \"rm *\": \"deny\"", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(compositionOf(NAMES), (command) => Effect.runPromise(deniedBy(command))),
        { numRuns: 400 }
      )
    ))

  it.live("the same compositions of a command that is not denied are allowed", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(compositionOf(HARMLESS), async (command) => !(await Effect.runPromise(deniedBy(command)))),
        { numRuns: 200 }
      )
    ))

  it.effect("the rules engine sees through the examples of the issue", () =>
    Effect.gen(function*() {
      for (const command of ["/bin/rm victim", "echo 'rm v' | bash", "R=rm; $R v", "timeout --signal KILL 5 rm v", "env -S 'rm v'"]) {
        expect(yield* deniedBy(command), command).toBe(true)
      }
      expect(yield* deniedBy("ls -la && git status")).toBe(false)
    }))
})
