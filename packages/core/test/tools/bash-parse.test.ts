import { TestInstance } from "@agent/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { findExecCommands, parseCommand } from "../../src/tool/BashParse.js"
import { isComputedName } from "../../src/tool/BashWords.js"
import { externalDirectories, pathArguments } from "../../src/tool/BashPaths.js"
import { commandName, runsOf } from "../../src/tool/BashWrappers.js"

/**
 * [command, bash patterns, always patterns]. Every simple command is its own pattern (its
 * source text, with redirects when it has them); `always` is its BashArity prefix plus " *".
 *
 * Decisions recorded here:
 * - An environment prefix stays in the pattern (`FOO=1 npm test`, the command node's text, as
 *   OpenCode does) but not in the tokens, so "always" is `npm test *`.
 * - Where the source text is not the command's words joined by spaces (an environment prefix,
 *   quotes, escapes, a line continuation, doubled spaces), the words are a second pattern: a
 *   deny such as `rm *` or `git push --force *` then sees `X=1 rm`, `\rm`, `"rm"` and
 *   `git push "--force"`, and an allow must cover both. "always" then also gets the source
 *   text's own prefix (`X=1 rm *`), so answering "always" covers the source pattern too.
 * - `cd`, `chdir`, `pushd`, `popd` add no pattern.
 * - `export`/`declare`/`local`/`unset` are patterns like any command; a bare assignment `x=1`
 *   and test expressions `[[ … ]]` / `[ … ]` are not commands and add nothing.
 * - A redirect written after `a && b` or `a | b` belongs to `b`, as in the shell (the grammar
 *   attaches it to the whole list). A redirect on a `{ … }` group or a subshell belongs to no
 *   single command: each inner command is its own pattern without it.
 */
const table: ReadonlyArray<readonly [string, ReadonlyArray<string>, ReadonlyArray<string>]> = [
  // simple commands and flags
  ["ls", ["ls"], ["ls *"]],
  ["ls -la src", ["ls -la src"], ["ls *"]],
  ["git status -s", ["git status -s"], ["git status *"]],
  ["git  status", ["git  status", "git status"], ["git status *", "git  status *"]],
  ["npm run build", ["npm run build"], ["npm run build *"]],
  ["npm install --save-dev vitest", ["npm install --save-dev vitest"], ["npm install *"]],
  ["docker compose up -d", ["docker compose up -d"], ["docker compose up *"]],
  ["kubectl rollout status deploy/web", ["kubectl rollout status deploy/web"], ["kubectl rollout status *"]],
  ["gh pr view 12", ["gh pr view 12"], ["gh pr view *"]],
  ["make", ["make"], ["make *"]],
  ["sudo rm -rf /", ["sudo rm -rf /", "rm -rf /"], ["sudo *", "rm *"]],
  // a command named by a path runs as its basename: both are patterns
  ["./scripts/build.sh --fast", ["./scripts/build.sh --fast", "build.sh --fast"], ["./scripts/build.sh *", "build.sh *"]],
  ["/usr/bin/../bin/rm -rf x", ["/usr/bin/../bin/rm -rf x", "rm -rf x"], ["/usr/bin/../bin/rm *", "rm *"]],
  // pipes and lists
  ["cat a | grep b", ["cat a", "grep b"], ["cat *", "grep *"]],
  ["ls && rm -rf / && echo ok", ["ls", "rm -rf /", "echo ok"], ["ls *", "rm *", "echo *"]],
  ["make; make test", ["make", "make test"], ["make *", "make test *"]],
  ["test -f x || touch x", ["test -f x", "touch x"], ["test *", "touch *"]],
  ["grep -r \"TODO\" . | wc -l", ["grep -r \"TODO\" .", "grep -r TODO .", "wc -l"], ["grep *", "wc *"]],
  ["ls && ls", ["ls"], ["ls *"]],
  ["ls &\necho done", ["ls", "echo done"], ["ls *", "echo *"]],
  // subshells and substitutions
  ["(cd sub && rm -rf build)", ["rm -rf build"], ["rm *"]],
  ["echo $(git rev-parse HEAD)", ["echo $(git rev-parse HEAD)", "git rev-parse HEAD"], ["echo *", "git rev-parse *"]],
  ["echo `whoami`", ["echo `whoami`", "whoami"], ["echo *", "whoami *"]],
  ["x=$(cat file)", ["cat file"], ["cat *"]],
  ["diff <(ls a) <(ls b)", ["diff <(ls a) <(ls b)", "ls a", "ls b"], ["diff *", "ls *"]],
  // redirects and here-docs
  ["echo hi > out.txt", ["echo hi > out.txt"], ["echo *"]],
  ["npm test 2>&1 | tee log.txt", ["npm test 2>&1", "tee log.txt"], ["npm test *", "tee *"]],
  ["ls | grep x > out", ["ls", "grep x > out"], ["ls *", "grep *"]],
  ["ls && cat x 2>&1 > log", ["ls", "cat x 2>&1 > log"], ["ls *", "cat *"]],
  ["a | b > f && c", ["a", "b > f", "c"], ["a *", "b *", "c *"]],
  ["{ echo a; rm b; } > out", ["echo a", "rm b"], ["echo *", "rm *"]],
  ["(ls && rm b) 2> err", ["ls", "rm b"], ["ls *", "rm *"]],
  ["cat <<EOF > notes.txt\nhello\nEOF", ["cat <<EOF > notes.txt\nhello\nEOF"], ["cat *"]],
  ["cat <<EOF\n$(rm -rf x)\nEOF", ["cat <<EOF\n$(rm -rf x)\nEOF", "rm -rf x"], ["cat *", "rm *"]],
  ["cat <<'EOF'\n$(rm -rf x)\nEOF", ["cat <<'EOF'\n$(rm -rf x)\nEOF"], ["cat *"]],
  // quoting and escapes
  ["echo \"a && b\"", ["echo \"a && b\"", "echo a && b"], ["echo *"]],
  ["echo 'rm -rf /; ls'", ["echo 'rm -rf /; ls'", "echo rm -rf /; ls"], ["echo *"]],
  [
    "git commit -m \"fix: a && b\" && git push",
    ["git commit -m \"fix: a && b\"", "git commit -m fix: a && b", "git push"],
    ["git commit *", "git push *"]
  ],
  ["echo a\\;b", ["echo a\\;b", "echo a;b"], ["echo *"]],
  [
    "\"./my script.sh\" arg",
    ["\"./my script.sh\" arg", "./my script.sh arg", "my script.sh arg"],
    ["./my script.sh *", "\"./my script.sh\" *", "my script.sh *"]
  ],
  ["python -c 'print(1)'", ["python -c 'print(1)'", "python -c print(1)"], ["python -c *"]],
  // multi-line
  ["npm ci\nnpm test", ["npm ci", "npm test"], ["npm ci *", "npm test *"]],
  // a continuation is also read joined (`r\⏎m` is `rm`), which here only respaces the text
  ["npm run build \\\n  --prod", ["npm run build \\\n  --prod", "npm run build --prod", "npm run build   --prod"], ["npm run build *"]],
  ["r\\\nm -rf x", ["r\\\nm -rf x", "r m -rf x", "rm -rf x"], ["r *", "rm *"]],
  ["$'\\x72m' -rf x", ["$'\\x72m' -rf x", "rm -rf x"], ["rm *", "$'\\x72m' *"]],
  // control flow and functions
  ["if [ -f x ]; then rm x; else echo missing; fi", ["rm x", "echo missing"], ["rm *", "echo *"]],
  ["for f in *.ts; do cat \"$f\"; done", ["cat \"$f\"", "cat $f"], ["cat *"]],
  ["while true; do sleep 1; done", ["true", "sleep 1"], ["true *", "sleep *"]],
  ["f() { rm -rf tmp; }; f", ["rm -rf tmp", "f"], ["rm *", "f *"]],
  ["case $x in a) rm a;; esac", ["rm a"], ["rm *"]],
  ["! grep -q foo file", ["grep -q foo file"], ["grep *"]],
  ["[[ -f x ]] && echo yes", ["echo yes"], ["echo *"]],
  // environment and builtins
  ["FOO=1 npm test", ["FOO=1 npm test", "npm test"], ["npm test *", "FOO=1 npm test *"]],
  ["export NODE_ENV=production && npm start", ["export NODE_ENV=production", "npm start"], ["export *", "npm start *"]],
  ["x=1", [], []],
  // directory changes add nothing
  ["cd dir && make", ["make"], ["make *"]],
  ["pushd src && ls && popd", ["ls"], ["ls *"]],
  ["cd /", [], []],
  // unicode
  ["echo \"héllo wörld 😀\" | tr a-z A-Z", ["echo \"héllo wörld 😀\"", "echo héllo wörld 😀", "tr a-z A-Z"], ["echo *", "tr *"]],
  // spellings that must not dodge a rule: the words as the command receives them are a pattern too
  ["X=1 rm -rf /", ["X=1 rm -rf /", "rm -rf /"], ["rm *", "X=1 rm *"]],
  ["\\rm -rf build", ["\\rm -rf build", "rm -rf build"], ["rm *", "\\rm *"]],
  ["\"rm\" -rf build", ["\"rm\" -rf build", "rm -rf build"], ["rm *", "\"rm\" *"]],
  ["ls && 'rm' -rf build", ["ls", "'rm' -rf build", "rm -rf build"], ["ls *", "rm *", "'rm' *"]],
  ["git push \"--force\" origin main", ["git push \"--force\" origin main", "git push --force origin main"], ["git push *"]],
  ["git push -\\f", ["git push -\\f", "git push -f"], ["git push *"]],
  // wrappers: the command they run is a pattern too
  ["sudo -u root nohup rm -rf x", ["sudo -u root nohup rm -rf x", "nohup rm -rf x", "rm -rf x"], ["sudo *", "nohup *", "rm *"]],
  ["env -S 'rm -rf x'", ["env -S 'rm -rf x'", "env -S rm -rf x", "rm -rf x"], ["env *", "rm *"]],
  ["trap 'rm -rf x' EXIT", ["trap 'rm -rf x' EXIT", "trap rm -rf x EXIT", "rm -rf x"], ["trap *", "rm *"]],
  ["bash <<< 'rm -rf x'", ["bash <<< 'rm -rf x'", "bash", "rm -rf x"], ["bash *", "rm *"]],
  ["env -i PATH=/bin rm -rf x", ["env -i PATH=/bin rm -rf x", "rm -rf x"], ["env *", "rm *"]],
  ["timeout -s KILL 5s git push", ["timeout -s KILL 5s git push", "git push"], ["timeout *", "git push *"]],
  ["nice -n 10 make", ["nice -n 10 make", "make"], ["nice *", "make *"]],
  ["ls | xargs -0 -n 1 rm -f", ["ls", "xargs -0 -n 1 rm -f", "rm -f"], ["ls *", "xargs *", "rm *"]],
  ["time npm test", ["time npm test", "npm test"], ["time *", "npm test *"]],
  ["nohup npm start &", ["nohup npm start", "npm start"], ["nohup *", "npm start *"]],
  ["command -v git", ["command -v git"], ["command *"]],
  // scripts run as text are parsed too; find -exec runs its command
  ["bash -c 'rm -rf x'", ["bash -c 'rm -rf x'", "bash -c rm -rf x", "rm -rf x"], ["bash *", "rm *"]],
  ["eval \"echo a; rm b\"", ["eval \"echo a; rm b\"", "eval echo a; rm b", "echo a", "rm b"], ["eval *", "echo *", "rm *"]],
  ["find . -name '*.o' -exec rm -f {} +", ["find . -name '*.o' -exec rm -f {} +", "find . -name *.o -exec rm -f {} +", "rm -f {}"], ["find *", "rm *"]],
  ["bash script.sh", ["bash script.sh"], ["bash *"]],
  ["env", ["env"], ["env *"]]
]

describe("parseCommand: patterns and always-prefixes", () => {
  it("the table is large enough to mean something", () => {
    expect(table.length).toBeGreaterThanOrEqual(40)
  })

  for (const [command, patterns, always] of table) {
    it.effect(JSON.stringify(command), () =>
      Effect.gen(function*() {
        const parsed = yield* parseCommand(command)
        expect(parsed.patterns).toEqual(patterns)
        expect(parsed.always).toEqual(always)
        expect(parsed.incomplete).toBe(false)
      }))
  }
})

describe("parseCommand: tokens", () => {
  const cases: ReadonlyArray<readonly [string, ReadonlyArray<ReadonlyArray<string>>]> = [
    ["rm my\\ file.txt 'a b' \"c d\"", [["rm", "my file.txt", "a b", "c d"]]],
    ["echo a\"b\"c'd'$x", [["echo", "abcd$x"]]],
    ["cat \"${HOME}/z\" \"say \\\"hi\\\"\"", [["cat", "${HOME}/z", "say \"hi\""]]],
    ["echo {a,b} ü{x,y}z", [["echo", "{a,b}", "ü{x,y}z"]]],
    ["FOO=1 BAR=2 npm test", [["npm", "test"]]],
    ["cd .. && ls", [["cd", ".."], ["ls"]]],
    ["unset FOO", [["unset", "FOO"]]]
  ]
  for (const [command, tokens] of cases) {
    it.effect(JSON.stringify(command), () =>
      Effect.map(parseCommand(command), (parsed) => expect(parsed.commands.map((entry) => entry.tokens)).toEqual(tokens)))
  }

  it.effect("a command the parser cannot fully read is also checked as a whole", () =>
    Effect.gen(function*() {
      const parsed = yield* parseCommand("rm -rf x )")
      expect(parsed.incomplete).toBe(true)
      expect(parsed.patterns).toEqual(["rm -rf x", "rm -rf x )"])
      expect(parsed.always).toEqual(["rm *", "rm -rf x )"])
      // the parser's repairs (a missing command after `&&`) are not patterns
      expect((yield* parseCommand("ls &&")).patterns).toEqual(["ls", "ls &&"])
    }))
})

describe("parseCommand: redirects", () => {
  it.effect("lists the files redirected to or from, anywhere in the script, without descriptor copies", () =>
    Effect.gen(function*() {
      const parsed = yield* parseCommand(
        "cat < in.txt > \"out file.txt\" 2>&1 && { ls; } >> log && (echo $(date > stamp)) 2> err && echo >&2 && cat <&0 && echo <<EOF\nhi\nEOF"
      )
      expect(parsed.redirects).toEqual(["in.txt", "out file.txt", "log", "stamp", "err"])
    }))
})

describe("runsOf: what a command runs besides itself", () => {
  it("reads each wrapper's options with its own grammar, through nested wrappers", () => {
    expect(runsOf(["sudo", "-u", "root", "-E", "rm", "-rf", "/"])).toEqual({ _tag: "Command", tokens: ["rm", "-rf", "/"] })
    expect(runsOf(["sudo", "--", "rm", "x"])).toEqual({ _tag: "Command", tokens: ["rm", "x"] })
    expect(runsOf(["env", "A=1", "B=2", "nice", "-n5", "make"])).toEqual({ _tag: "Command", tokens: ["nice", "-n5", "make"] })
    expect(runsOf(["nice", "-n5", "make"])).toEqual({ _tag: "Command", tokens: ["make"] })
    expect(runsOf(["nice", "--adjustment", "5", "make"])).toEqual({ _tag: "Command", tokens: ["make"] })
    expect(runsOf(["timeout", "5s", "sleep", "10"])).toEqual({ _tag: "Command", tokens: ["sleep", "10"] })
    expect(runsOf(["timeout", "--signal", "KILL", "5", "rm", "x"])).toEqual({ _tag: "Command", tokens: ["rm", "x"] })
    expect(runsOf(["xargs", "-I", "{}", "cp", "{}", "dst"])).toEqual({ _tag: "Command", tokens: ["cp", "${XARGS_INPUT}", "dst"] })
    expect(runsOf(["xargs", "--max-args", "1", "rm"])).toEqual({ _tag: "Command", tokens: ["rm"] })
    expect(runsOf(["/usr/bin/env", "-", "rm", "x"])).toEqual({ _tag: "Command", tokens: ["rm", "x"] })
    expect(runsOf(["env", "-S", "rm -rf 'a b'", "c"])).toEqual({ _tag: "Command", tokens: ["rm", "-rf", "a b", "c"] })
    expect(runsOf(["env", "--unset", "X", "rm", "x"])).toEqual({ _tag: "Command", tokens: ["rm", "x"] })
    expect(runsOf(["command", "-v", "git"])).toBeUndefined()
    expect(runsOf(["sudo", "-u", "root"])).toBeUndefined()
    expect(runsOf(["rm", "-rf", "x"])).toBeUndefined()
  })

  it("scripts given as text: shells' -c (after --, through option clusters), eval, trap, su -c, watch, alias values", () => {
    expect(runsOf(["bash", "-c", "rm x"])).toEqual({ _tag: "Script", script: "rm x" })
    expect(runsOf(["/bin/sh", "-ec", "ls"])).toEqual({ _tag: "Script", script: "ls" })
    expect(runsOf(["bash", "-c", "--", "rm x"])).toEqual({ _tag: "Script", script: "rm x" })
    expect(runsOf(["bash", "+x", "-o", "pipefail", "-c", "rm x"])).toEqual({ _tag: "Script", script: "rm x" })
    expect(runsOf(["zsh", "-lc", "make"])).toEqual({ _tag: "Script", script: "make" })
    expect(runsOf(["eval", "rm", "-rf", "x"])).toEqual({ _tag: "Script", script: "rm -rf x" })
    expect(runsOf(["trap", "--", "rm x", "EXIT"])).toEqual({ _tag: "Script", script: "rm x" })
    expect(runsOf(["trap", "-p"])).toBeUndefined()
    expect(runsOf(["su", "root", "-c", "rm x"])).toEqual({ _tag: "Script", script: "rm x" })
    expect(runsOf(["script", "-q", "-c", "rm x", "/dev/null"])).toEqual({ _tag: "Script", script: "rm x" })
    expect(runsOf(["watch", "-n", "1", "rm", "x"])).toEqual({ _tag: "Script", script: "rm x" })
    expect(runsOf(["watch", "-x", "rm", "x"])).toEqual({ _tag: "Command", tokens: ["rm", "x"] })
    expect(runsOf(["alias", "x=rm -rf", "y=ls"])).toEqual({ _tag: "Script", script: "rm -rf\nls" })
    expect(runsOf(["bash", "script.sh"])).toBeUndefined()
    expect(runsOf(["python", "-c", "print(1)"])).toBeUndefined()
  })

  it("standard input as a script, and what cannot be known", () => {
    expect(runsOf(["bash"])).toEqual({ _tag: "Stdin" })
    expect(runsOf(["bash", "-s"])).toEqual({ _tag: "Stdin" })
    expect(runsOf([".", "/dev/stdin"])).toEqual({ _tag: "Stdin" })
    expect(runsOf(["source", "<(curl x)"])).toMatchObject({ _tag: "Unknown" })
    expect(runsOf(["timeout", "--weird", "5", "rm", "x"])).toMatchObject({ _tag: "Unknown" })
    expect(runsOf(["parallel", "rm", ":::", "a"])).toMatchObject({ _tag: "Unknown" })
  })

  it("commandName: the basename of a path, `..` resolved", () => {
    expect(commandName("/usr/bin/../bin/rm")).toBe("rm")
    expect(commandName("rm")).toBe("rm")
    expect(commandName("./x/../rm")).toBe("rm")
  })

  it("isComputedName: expansions, substitutions, globs and braces, not `[`", () => {
    for (const name of ["$R", "${X:-rm}", "$(echo rm)", "`echo rm`", "rm${IFS}v", "/bin/r?", "/usr/bin/[r]m", "{r,}m", "r*", "<(x)"]) {
      expect(isComputedName(name), name).toBe(true)
    }
    for (const name of ["rm", "[", "/usr/bin/rm", "git", "a-b.c_d", "{}"]) expect(isComputedName(name), name).toBe(false)
  })
})

describe("scripts inside commands", () => {
  it("findExecCommands: every -exec / -execdir / -ok command", () => {
    expect(findExecCommands(["find", ".", "-exec", "rm", "{}", ";", "-execdir", "git", "add", "{}", "+"])).toEqual([
      ["rm", "{}"],
      ["git", "add", "{}"]
    ])
    expect(findExecCommands(["find", ".", "-name", "x"])).toEqual([])
  })

  it.effect("a nested script that cannot be read is checked as a whole; nesting stops at a depth", () =>
    Effect.gen(function*() {
      const broken = yield* parseCommand("sh -c 'ls &&'")
      expect(broken.incomplete).toBe(true)
      expect(broken.opaque).toEqual([{ text: "sh -c 'ls &&'", reason: "the shell grammar could not read all of it" }])
      const deep = yield* parseCommand("bash -c 'bash -c \"bash -c \\\"bash -c rm\\\"\"'")
      expect(deep.commands.length).toBe(4)
      expect(deep.opaque.map((entry) => entry.reason)).toEqual(["scripts nest deeper than 3 levels"])
    }))
})

describe("pathArguments", () => {
  it("skips flags, chmod modes and chown owners; `--` ends the flags", () => {
    expect(pathArguments(["rm", "-rf", "a", "b"])).toEqual(["a", "b"])
    expect(pathArguments(["chmod", "-R", "u+x", "dir"])).toEqual(["dir"])
    expect(pathArguments(["chmod", "+x", "run.sh"])).toEqual(["run.sh"])
    expect(pathArguments(["chmod", "-x", "/etc/x"])).toEqual(["/etc/x"])
    expect(pathArguments(["chmod", "755", "a", "b"])).toEqual(["a", "b"])
    expect(pathArguments(["chmod", "--reference=ref", "file"])).toEqual(["file"])
    expect(pathArguments(["chown", "root:root", "/etc/x"])).toEqual(["/etc/x"])
    expect(pathArguments(["rm", "--", "-weird"])).toEqual(["-weird"])
    expect(pathArguments(["cd"])).toEqual(["~"])
    expect(pathArguments(["cd", "-"])).toEqual([])
    expect(pathArguments(["ls", "/etc"])).toEqual([])
  })
})

describe("external directories", () => {
  const setup = Effect.gen(function*() {
    const box = yield* TestInstance.sandbox()
    fs.mkdirSync(box.path("outside"), { recursive: true })
    fs.writeFileSync(box.path("outside/file"), "secret")
    fs.symlinkSync(box.path("outside"), box.path("project/link"))
    fs.mkdirSync(box.path("project/src"), { recursive: true })
    const scan = (command: string, workdir = box.instance.directory) =>
      Effect.map(parseCommand(command), (parsed) =>
        externalDirectories(parsed.runs, { instance: box.instance, workdir, redirects: parsed.redirects }))
    return { box, scan }
  })
  const real = (target: string) => fs.realpathSync(target)

  it.scoped("an absolute path outside the project asks for its directory", () =>
    Effect.gen(function*() {
      const { scan } = yield* setup
      expect(yield* scan("rm /etc/passwd")).toEqual([path.join(real("/etc"), "*")])
      expect(yield* scan("ls && rm -rf /etc/passwd && echo ok")).toEqual([path.join(real("/etc"), "*")])
      // through a wrapper too
      expect(yield* scan("sudo -u root rm /etc/passwd")).toEqual([path.join(real("/etc"), "*")])
      expect(yield* scan("nohup cp a /etc/x &")).toEqual([path.join(real("/etc"), "*")])
      // whatever the spelling of the command
      for (const command of ["/bin/rm /etc/passwd", "/usr/bin/../bin/rm /etc/passwd", "env -S 'rm /etc/passwd'", "$'\\x72m' /etc/passwd", "bash -c 'rm /etc/passwd'", "timeout --signal KILL 5 rm /etc/passwd"]) {
        expect(yield* scan(command), command).toEqual([path.join(real("/etc"), "*")])
      }
    }))

  it.scoped("a directory argument asks for the directory itself", () =>
    Effect.gen(function*() {
      const { box, scan } = yield* setup
      expect(yield* scan("cd ../outside && ls")).toEqual([path.join(box.path("outside"), "*")])
      expect(yield* scan("rm -r ../outside")).toEqual([path.join(box.path("outside"), "*")])
    }))

  it.scoped("a relative path escaping the project is caught", () =>
    Effect.gen(function*() {
      const { box, scan } = yield* setup
      expect(yield* scan("cat ../outside/file")).toEqual([path.join(box.path("outside"), "*")])
      expect(yield* scan("cat src/../../outside/file")).toEqual([path.join(box.path("outside"), "*")])
    }))

  it.scoped("~ and $HOME are the instance's home", () =>
    Effect.gen(function*() {
      const { box, scan } = yield* setup
      const home = path.join(box.instance.home, "*")
      expect(yield* scan("cp a ~/b")).toEqual([home])
      expect(yield* scan("rm \"$HOME/notes\"")).toEqual([home])
      expect(yield* scan("mkdir ${HOME}/new/dir")).toEqual([path.join(box.instance.home, "new", "*")])
      expect(yield* scan("cd")).toEqual([home])
    }))

  it.scoped("a symlink inside the project that points outside counts as outside", () =>
    Effect.gen(function*() {
      const { box, scan } = yield* setup
      expect(yield* scan("rm link/file")).toEqual([path.join(box.path("outside"), "*")])
      expect(yield* scan("touch link/new.txt")).toEqual([path.join(box.path("outside"), "*")])
    }))

  it.scoped("paths inside the project, and commands that are not file commands, add nothing", () =>
    Effect.gen(function*() {
      const { scan } = yield* setup
      expect(yield* scan("rm -rf build src/x ./a/../b && mkdir -p dist && chmod 755 run.sh")).toEqual([])
      expect(yield* scan("ls /etc && grep root /etc/passwd")).toEqual([])
      expect(yield* scan("cd src && cat README.md")).toEqual([])
    }))

  it.scoped("commands nested in substitutions are checked, and each directory is asked once", () =>
    Effect.gen(function*() {
      const { box, scan } = yield* setup
      expect(yield* scan("echo $(cat /etc/hosts) && rm /etc/hostname && cat ../outside/file")).toEqual([
        path.join(real("/etc"), "*"),
        path.join(box.path("outside"), "*")
      ])
    }))

  it.scoped("files redirected to or from outside the project are asked for; /dev/null and descriptor copies are not", () =>
    Effect.gen(function*() {
      const { box, scan } = yield* setup
      const outside = path.join(box.path("outside"), "*")
      expect(yield* scan("echo x > ../outside/new.txt")).toEqual([outside])
      expect(yield* scan("sort < ../outside/file > sorted.txt")).toEqual([outside])
      expect(yield* scan("{ echo a; echo b; } >> link/log")).toEqual([outside])
      expect(yield* scan("make 2> ~/build.log")).toEqual([path.join(box.instance.home, "*")])
      expect(yield* scan("exec 3> \"../outside/fd out\"")).toEqual([outside])
      expect(yield* scan("ls && echo done &>> ../outside/all.log")).toEqual([outside])
      expect(yield* scan("ls > /dev/null 2>&1 && echo x >&2 && cat < /dev/stdin > out.txt 2> /dev/fd/2")).toEqual([])
    }))

  it.scoped("a workdir outside the project is asked for, and relative paths start from it", () =>
    Effect.gen(function*() {
      const { box, scan } = yield* setup
      expect(yield* scan("rm file", box.path("outside"))).toEqual([path.join(box.path("outside"), "*")])
      // from inside the project's src, ../src/x stays inside
      expect(yield* scan("rm ../src/x", box.path("project/src"))).toEqual([])
    }))
})
