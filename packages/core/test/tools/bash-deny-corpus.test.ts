import { DeniedError, type PermissionConfig, type SessionID } from "@agent/domain"
import { ScriptedModel, TestRuntime } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Stream } from "effect"
import * as fs from "node:fs"
import { AgentRegistry } from "../../src/agent/AgentRegistry.js"
import { Bus } from "../../src/runtime/Bus.js"
import * as Permission from "../../src/permission/Permission.js"
import { PermissionPolicy } from "../../src/permission/PermissionPolicy.js"
import { PermissionService } from "../../src/permission/PermissionService.js"
import type * as Tool from "../../src/tool/Tool.js"
import * as Bash from "../../src/tools/Bash.js"

/**
 * Spellings of `rm V` (V: the victim file), from bash's grammar and the common Linux wrappers.
 * Each one deletes V when bash runs it with nothing to stop it (the calibration below checks
 * that most do on this machine), so a deny of `rm *` must hold for every one.
 */
const SPELLINGS: ReadonlyArray<string> = [
  // command paths, `..`, globs and braces in command position
  "/bin/rm V", "/usr/bin/rm V", "/bin/../bin/rm V", "//bin//rm V", "/usr/./bin/rm V", "/bin/r? V", "/usr/bin/[r]m V",
  "{r,}m V", "/bin/rm* V", "../../../../../../../../../../bin/rm V", "/usr/bin/../../bin/rm V", "/bin/[q-s]m V",
  // quoting and escapes
  "'rm' V", "\"rm\" V", "\\rm V", "r''m V", "r\"\"m V", "r\\m V", "$'rm' V", "$'\\x72m' V", "$'\\162m' V",
  "$'\\u0072m' V", "$\"rm\" V", "\"r\"'m' V", "r\\\nm V", "rm \\\nV", "\\\nrm V", "'/bin/rm' V", "\"/usr/bin/\"rm V",
  // lists, pipes, groups, control flow, substitutions
  "X=1 rm V", "ls && rm V", "ls; rm V", "false || rm V", "ls | rm V", "rm V &", "(rm V)", "{ rm V; }", "$(rm V)",
  "`rm V`", "echo $(rm V)", "x=$(rm V)", "if true; then rm V; fi", "for i in 1; do rm V; done",
  "while rm V; do break; done", "case a in a) rm V;; esac", "f() { rm V; }; f", "function f { rm V; }; f", "! rm V",
  "cat <(rm V)", "echo >(rm V)", "[[ $(rm V) ]]", "(( $(rm V) ))", "echo ${x:-$(rm V)}", "a[$(rm V)]=1",
  "cat <<EOF\n$(rm V)\nEOF", "echo \"$(rm V)\"", "ls\nrm V", "ls & rm V", "time rm V", "time -p rm V", "coproc rm V",
  "coproc { rm V; }", "until rm V; do :; done", "select x in a; do rm V; break; done <<< 1",
  // scripts given as text, and scripts on standard input
  "trap 'rm V' EXIT", "trap -- 'rm V' EXIT", "alias x='rm V'; x", "alias x=rm", "bash -c 'rm V'", "sh -c 'rm V'",
  "bash -c -- 'rm V'", "bash -ec 'rm V'", "bash -o pipefail -c 'rm V'", "bash +x -c 'rm V'", "/bin/bash -c 'rm V'",
  "dash -c 'rm V'", "bash -s <<< 'rm V'", "bash <<< 'rm V'", "bash <<EOF\nrm V\nEOF", "sh <<'EOF'\nrm V\nEOF",
  "bash <<'E'\n\\rm V\nE", "bash <<E\n\\rm V\nE", "bash <<-E\n\t\\rm V\n\tE", "sh <<'E' && true\n\\rm V\nE",
  "echo 'rm V' | bash", "echo 'rm V' | sh -s", "printf 'rm V' | bash", "cat <<< 'rm V' | bash", "eval 'rm V'",
  "eval \"rm V\"", "eval rm V", ". /dev/stdin <<< 'rm V'", "source /dev/stdin <<< 'rm V'", "source <(echo rm V)",
  ". <(echo rm V)", "bash <(echo rm V)", "bash -c \"eval 'rm V'\"", "sh -c \"bash -c 'rm V'\"",
  "echo 'rm V' | xargs -I{} bash -c '{}'", "echo 'rm V' | bash /dev/stdin", "bash -c 'r\\\nm V'",
  // wrappers, by name and by path, with their options
  "env rm V", "/usr/bin/env rm V", "env - rm V", "env -i rm V", "env -S 'rm V'", "env -S\"rm V\"", "env --split-string='rm V'",
  "env --unset X rm V", "env -u X rm V", "env X=1 rm V", "env -C . rm V", "env -iS 'rm V'", "nohup rm V", "/usr/bin/nohup rm V",
  "nice rm V", "nice -n 5 rm V", "nice --adjustment 5 rm V", "nice -5 rm V", "timeout 5 rm V", "timeout --signal KILL 5 rm V",
  "timeout -s KILL 5 rm V", "timeout -k 1 5 rm V", "xargs rm <<< V", "echo V | xargs rm", "echo V | xargs --max-args 1 rm",
  "echo V | /usr/bin/xargs -n1 rm", "find . -name V -exec rm {} \\;", "find . -name V -execdir rm {} +", "command rm V",
  "exec rm V", "exec -a x rm V", "stdbuf -o0 rm V", "setsid rm V", "setsid -w rm V", "ionice -c 3 rm V",
  "script -qc 'rm V' /dev/null", "script -q -c 'rm V' /dev/null", "su -c 'rm V'", "su root -c 'rm V'",
  "runuser -u root -- rm V", "runuser root -c 'rm V'", "flock /tmp/agent-corpus.lock rm V",
  "flock /tmp/agent-corpus.lock -c 'rm V'", "taskset 1 rm V", "taskset -c 0 rm V", "chrt -o 0 rm V", "unshare rm V",
  "unshare -r rm V", "setpriv --reuid 0 rm V", "chroot / rm V", "watch rm V", "watch -n 1 rm V", "watch -x rm V",
  "sudo rm V", "sudo -u root rm V", "sudo -s rm V", "doas rm V", "nsenter -t 1 rm V", "strace -o /dev/null rm V",
  "busybox rm V", "ip netns exec x rm V", "parallel rm ::: V", "sem rm V", "systemd-run rm V", "sg root -c 'rm V'",
  "pkexec rm V", "fakeroot rm V", "eatmydata rm V", "proxychains rm V", "faketime 2020-01-01 rm V", "xvfb-run rm V",
  "catchsegv rm V", "nohup env nice timeout 5 rm V", "sudo env -S 'nice rm V'", "/usr/bin/timeout 5 /bin/rm V",
  "env /usr/bin/rm V", "nohup /bin/../bin/rm V", "builtin command rm V",
  // names computed when the command runs
  "R=rm; $R V", "${X:-rm} V", "$(echo rm) V", "`echo rm` V", "rm${IFS}V", "X='rm V'; eval $X", "X='rm V'; bash -c \"$X\"",
  "R=rm; \"$R\" V", "R=rm; ${R} V", "$(printf rm) V", "read R <<< rm; $R V", "printf -v R rm; $R V", "declare R=rm; $R V",
  "hash -p /bin/rm ls; ls V", "set -- rm V; \"$@\"", "arr=(rm V); \"${arr[@]}\"", "x=R; R=rm; ${!x} V", "$'\\x24R' V",
  "R=rm; env $R V", "R=rm; sudo $R V", "R=rm; xargs $R <<< V", "R=rm; nohup \"$R\" V"
]

const VICTIM = "victim.txt"
const spell = (spelling: string) => spelling.replaceAll("V", VICTIM)

/**
 * The real bash tool, its asks decided by the real PermissionService over the build agent's
 * rules (from `config`) and the managed policy (from `managed`). Asks are answered as
 * `--auto-approve` answers them: "once", except an ask only a person may answer, which is
 * rejected (there is nobody at a terminal).
 */
const withRuntime = <A, E>(
  files: Readonly<Record<string, string | object>>,
  body: (run: (command: string) => Effect.Effect<Either.Either<Tool.ToolResult, unknown>>, victim: string) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const runtime = yield* TestRuntime.make({ model: ScriptedModel.make([]), files })
    return yield* Effect.gen(function*() {
      const permissions = yield* PermissionService
      const policy = yield* PermissionPolicy
      const agent = yield* (yield* AgentRegistry).get("build")
      const bus = yield* Bus
      const tool = yield* Bash.make
      const asked = yield* bus.subscribe({ types: ["permission.asked"] })
      yield* asked.pipe(
        Stream.runForEach((event) =>
          permissions.reply({ requestID: event.properties.id, reply: event.properties.requiresPerson === undefined ? "once" : "reject" })
            .pipe(Effect.ignore)
        ),
        Effect.forkScoped
      )
      const context: Tool.ToolContext = {
        sessionID: "ses_corpus" as SessionID,
        messageID: "msg_corpus" as Tool.ToolContext["messageID"],
        callID: "call_corpus",
        agent,
        rules: Permission.merge(agent.permission, policy.rules),
        abort: new AbortController().signal,
        ask: (request) => permissions.ask({ sessionID: "ses_corpus" as SessionID, ...request, ruleset: agent.permission }),
        metadata: () => Effect.void
      }
      const victim = runtime.box.path(`project/${VICTIM}`)
      const run = (command: string) =>
        Effect.suspend(() => {
          fs.writeFileSync(victim, "keep me")
          return Effect.either(tool.execute({ command, description: "corpus", timeout: 3_000 }, context))
        })
      return yield* body(run, victim)
    }).pipe(Effect.provide(runtime.layer))
  })

const denyRm: PermissionConfig = { bash: { "*": "allow", "rm *": "deny" } }

describe("bash deny rules hold whatever the spelling", () => {
  it("the corpus is large enough to mean something", () => {
    expect(new Set(SPELLINGS).size).toBe(SPELLINGS.length)
    expect(SPELLINGS.length).toBeGreaterThanOrEqual(150)
  })

  it.scopedLive("calibration: with no deny, most spellings really delete the victim on this machine", () =>
    withRuntime({ "project/agent.json": { permission: { bash: "allow" } } }, (run, victim) =>
      Effect.gen(function*() {
        let deleted = 0
        for (const spelling of SPELLINGS) {
          yield* run(spell(spelling))
          if (!fs.existsSync(victim)) deleted++
        }
        // Some need programs this machine may lack (sudo, doas, parallel, …): those still must be denied.
        expect(deleted).toBeGreaterThanOrEqual(120)
      })), 300_000)

  for (const [where, files] of [
    ["the project's config", { "project/agent.json": { permission: denyRm } }],
    ["the managed policy", { "project/agent.json": { permission: { bash: "allow" } }, "managed/agent.json": { permission: { bash: { "rm *": "deny" } } } }]
  ] as const) {
    it.scopedLive(`with "rm *": "deny" in ${where}, every spelling is denied before it runs, under --auto-approve`, () =>
      withRuntime(files, (run, victim) =>
        Effect.gen(function*() {
          const held: Array<string> = []
          const broken: Array<string> = []
          for (const spelling of SPELLINGS) {
            const result = yield* run(spell(spelling))
            const denied = Either.isLeft(result) && result.left instanceof DeniedError
            ;(denied && fs.existsSync(victim) ? held : broken).push(spelling)
          }
          expect(broken).toEqual([])
          expect(held.length).toBe(SPELLINGS.length)
          // Commands that are not rm still run.
          const ls = yield* run("ls && echo ok && git status --short > /dev/null")
          expect(Either.isRight(ls) && ls.right.output).toContain("ok")
        })), 300_000)
  }

  it.scopedLive("a name computed at run time is allowed when no bash rule denies, and asks a person when a rule asks", () =>
    Effect.gen(function*() {
      yield* withRuntime({ "project/agent.json": { permission: { bash: "allow" } } }, (run, victim) =>
        Effect.gen(function*() {
          const result = yield* run(spell("R=rm; $R V"))
          expect(Either.isRight(result)).toBe(true)
          expect(fs.existsSync(victim)).toBe(false)
        }))
      yield* withRuntime({ "project/agent.json": { permission: { bash: { "*": "allow", "git push *": "ask" } } } }, (run, victim) =>
        Effect.gen(function*() {
          // --auto-approve answers ordinary asks, but not one the rules cannot check.
          const result = yield* run(spell("R=rm; $R V"))
          expect(Either.isLeft(result) && (result.left as { readonly _tag: string })._tag).toBe("RejectedError")
          expect(fs.existsSync(victim)).toBe(true)
        }))
    }), 60_000)

  it.scopedLive("a rule naming the exact command, after the deny, allows it on purpose; the denial says how", () =>
    Effect.gen(function*() {
      yield* withRuntime({ "project/agent.json": { permission: denyRm } }, (run) =>
        Effect.gen(function*() {
          const result = yield* run("R=ls; $R")
          expect(Either.isLeft(result)).toBe(true)
          const message = Either.isLeft(result) ? String((result.left as Error).message) : ""
          expect(message).toContain("is computed when it runs")
          expect(message).toContain('"$R": "allow"')
        }))
      yield* withRuntime(
        { "project/agent.json": { permission: { bash: { "*": "allow", "rm *": "deny", "$R": "allow" } } } },
        (run) => Effect.map(run("R=ls; $R"), (result) => expect(Either.isRight(result)).toBe(true))
      )
    }), 60_000)
})
