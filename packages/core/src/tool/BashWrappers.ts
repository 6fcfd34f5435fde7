// Over 500 lines: most of it is one data table (WRAPPERS, how each wrapper command reads its options), kept beside its readers.
import * as path from "node:path"

/**
 * Commands that run another command: `sudo rm x` runs `rm x`, `bash -c 'rm x'` runs the script
 * `rm x`, `trap 'rm x' EXIT` will run it later. Each is known by the basename of its name and
 * its options are read with the program's own grammar (which options take a value, `--`,
 * `-S` splitting), so an option cannot hide where the command starts. A wrapper given an
 * option this table does not know, or one whose command cannot be known before it runs (a
 * script piped into a shell), makes the command unknown.
 */

/** How an option uses the words after it. */
type Arity = "flag" | "value" | "optional"

interface Grammar {
  /** Short options: `-n 5`, `-n5`, `-abc` (flags clustered, the last may take a value). */
  readonly short: Readonly<Record<string, Arity>>
  /** Long options: `--name=value` or `--name value` for "value"; only `--name=value` for "optional". */
  readonly long: Readonly<Record<string, Arity>>
  /** GNU getopt without `+`: options may follow operands (`su root -c 'cmd'`). */
  readonly permute?: boolean
  /** `nice -5 cmd`: a negative number is an option. */
  readonly numericOption?: boolean
  /** Shells: `+x` and `+o name` unset what `-x` and `-o name` set. */
  readonly plusOptions?: boolean
}

interface ParsedOptions {
  /** Each option given, by its canonical spelling (`-c` or `--command`), with its value when it has one. */
  readonly options: ReadonlyArray<{ readonly name: string; readonly value: string | undefined }>
  /** The words that are not options, in order. */
  readonly operands: ReadonlyArray<string>
}

/** Reads `words` with `grammar`; a string names an option the grammar does not know. */
const parseOptions = (words: ReadonlyArray<string>, grammar: Grammar): ParsedOptions | string => {
  const options: Array<{ name: string; value: string | undefined }> = []
  const operands: Array<string> = []
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!
    if (word === "--") {
      operands.push(...words.slice(index + 1))
      break
    }
    if (word.startsWith("--") && word.length > 2) {
      const eq = word.indexOf("=")
      const name = eq === -1 ? word.slice(2) : word.slice(2, eq)
      // Long options may be abbreviated to any unique prefix.
      const candidates = Object.keys(grammar.long).filter((known) => known === name || known.startsWith(name))
      const exact = candidates.includes(name) ? name : candidates.length === 1 ? candidates[0] : undefined
      if (exact === undefined) {
        if (grammar.numericOption && /^\d+$/.test(name)) continue
        return word
      }
      const arity = grammar.long[exact]!
      if (eq !== -1) options.push({ name: `--${exact}`, value: word.slice(eq + 1) })
      else if (arity === "value") options.push({ name: `--${exact}`, value: words[++index] ?? "" })
      else options.push({ name: `--${exact}`, value: undefined })
      continue
    }
    if ((word.startsWith("-") || (grammar.plusOptions === true && word.startsWith("+"))) && word.length > 1) {
      if (grammar.numericOption && /^-\d+$/.test(word)) continue
      for (let at = 1; at < word.length; at++) {
        const letter = word[at]!
        const arity = grammar.short[letter]
        if (arity === undefined) return `-${letter}`
        if (arity === "flag") {
          options.push({ name: `-${letter}`, value: undefined })
          continue
        }
        const rest = word.slice(at + 1)
        if (rest !== "") options.push({ name: `-${letter}`, value: rest })
        else if (arity === "value") options.push({ name: `-${letter}`, value: words[++index] ?? "" })
        else options.push({ name: `-${letter}`, value: undefined })
        break
      }
      continue
    }
    operands.push(word)
    if (!grammar.permute) {
      operands.push(...words.slice(index + 1))
      break
    }
  }
  return { options, operands }
}

const flags = (letters: string): Record<string, Arity> => Object.fromEntries([...letters].map((letter) => [letter, "flag" as const]))
const valued = (letters: string): Record<string, Arity> => Object.fromEntries([...letters].map((letter) => [letter, "value" as const]))
const longs = (spec: Record<string, Arity | ReadonlyArray<string>>): Record<string, Arity> => {
  const out: Record<string, Arity> = {}
  for (const [arity, names] of Object.entries(spec)) {
    if (Array.isArray(names)) for (const name of names) out[name] = arity as Arity
  }
  return out
}
const HELP = ["help", "version"]

/** Reserved words that open a compound command. */
const COMPOUND_STARTS: ReadonlySet<string> = new Set(["{", "(", "((", "[[", "if", "for", "while", "until", "case", "select", "function"])

/** What a command runs, when it runs something. */
export type Runs =
  /** Another command, by its words (`rm x` for `sudo rm x`). */
  | { readonly _tag: "Command"; readonly tokens: ReadonlyArray<string> }
  /** A shell script given as text (`bash -c '…'`, `eval`, `trap`, `watch`). */
  | { readonly _tag: "Script"; readonly script: string }
  /** A shell reading its script from standard input (`bash`, `bash -s`, `su`), or a file it names. */
  | { readonly _tag: "Stdin" }
  /** What it runs cannot be known before it runs; `reason` says why. */
  | { readonly _tag: "Unknown"; readonly reason: string }

interface Wrapper {
  readonly grammar: Grammar
  /** Operands before the command (`timeout 5 cmd`: the duration). */
  readonly leading?: number
  /** What the parsed words run; the default is the operands after `leading` as a command. */
  readonly runs?: (parsed: ParsedOptions, name: string) => Runs | undefined
}

const has = (parsed: ParsedOptions, ...names: ReadonlyArray<string>) => parsed.options.some((option) => names.includes(option.name))
const valueOf = (parsed: ParsedOptions, ...names: ReadonlyArray<string>) =>
  parsed.options.findLast((option) => names.includes(option.name))?.value

/** The operands as a command, or nothing when there are none. */
const commandOf = (operands: ReadonlyArray<string>): Runs | undefined =>
  operands.length > 0 ? { _tag: "Command", tokens: operands } : undefined

/** Splits `env -S` text into words: quotes, backslash escapes and `#` comments as GNU env reads them. */
export const splitEnvString = (text: string): Array<string> => {
  const words: Array<string> = []
  let current: string | undefined
  let quote: "'" | "\"" | undefined
  const escapes: Record<string, string> = { _: " ", n: "\n", t: "\t", r: "\r", f: "\f", v: "\v", "\\": "\\", "'": "'", "\"": "\"", "#": "#", $: "$" }
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!
    if (quote === "'") {
      if (char === "'") quote = undefined
      else if (char === "\\" && (text[index + 1] === "'" || text[index + 1] === "\\")) current += text[++index]!
      else current += char
      continue
    }
    if (char === "\\") {
      const next = text[++index] ?? ""
      if (next === "c") break
      current = (current ?? "") + (escapes[next] ?? next)
      continue
    }
    if (quote === "\"") {
      if (char === "\"") quote = undefined
      else current += char
      continue
    }
    if (char === "'" || char === "\"") {
      quote = char
      current ??= ""
      continue
    }
    if (/\s/.test(char)) {
      if (current !== undefined) words.push(current)
      current = undefined
      continue
    }
    if (char === "#" && current === undefined) break
    current = (current ?? "") + char
  }
  if (current !== undefined) words.push(current)
  return words
}

/** A shell's `-c` script, or standard input when it names no script file. */
const shellRuns = (parsed: ParsedOptions): Runs | undefined => {
  if (has(parsed, "-c")) {
    const script = parsed.operands[0]
    return script === undefined ? { _tag: "Unknown", reason: "the shell's -c script is not in the command (it comes from input)" } : { _tag: "Script", script }
  }
  if (has(parsed, "-s") || parsed.operands.length === 0) return { _tag: "Stdin" }
  const file = parsed.operands[0]!
  if (isStdinFile(file)) return { _tag: "Stdin" }
  if (/^[<>]\(/.test(file)) return { _tag: "Unknown", reason: `the script ${file} is the output of a command` }
  // A script file: what it does is the sandbox's business, not the rules'.
  return undefined
}

/** Paths that read the shell's own standard input. */
export const isStdinFile = (file: string) => file === "-" || /^\/dev\/(stdin|fd\/0)$/.test(file) || /^\/proc\/(self|\d+)\/fd\/0$/.test(file)

const SHELL_GRAMMAR: Grammar = {
  short: { ...flags("abefhikmnprstuvxBCEHPTlcD"), o: "value", O: "value" },
  long: longs({
    flag: ["login", "noediting", "noprofile", "norc", "posix", "restricted", "verbose", "debugger", "dump-strings", "dump-po-strings", "pretty-print", "help", "version"],
    value: ["rcfile", "init-file"]
  }),
  plusOptions: true
}

/** `su` and `runuser` run `-c`'s script in the target user's shell. */
const SU_GRAMMAR: Grammar = {
  short: { ...flags("flmpPhV"), c: "value", g: "value", G: "value", s: "value", w: "value", u: "value" },
  long: longs({
    flag: ["fast", "login", "preserve-environment", "pty", ...HELP],
    value: ["command", "session-command", "group", "supp-group", "shell", "whitelist-environment", "user"]
  }),
  permute: true
}

const suRuns = (parsed: ParsedOptions, name: string): Runs | undefined => {
  const script = valueOf(parsed, "-c", "--command", "--session-command")
  if (script !== undefined) return { _tag: "Script", script }
  // `runuser -u user -- cmd args` runs the command itself.
  if (name === "runuser" && has(parsed, "-u", "--user")) return commandOf(parsed.operands)
  return { _tag: "Stdin" }
}

export const SHELLS: ReadonlySet<string> = new Set(["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "rbash", "fish"])

const WRAPPERS: ReadonlyMap<string, Wrapper> = new Map<string, Wrapper>([
  ...[...SHELLS].map((shell) => [shell, { grammar: SHELL_GRAMMAR, runs: shellRuns }] as const),
  ["command", {
    grammar: { short: flags("pvV"), long: {} },
    // `command -v git` only looks the command up.
    runs: (parsed) => (has(parsed, "-v", "-V") ? undefined : commandOf(parsed.operands))
  }],
  ["builtin", { grammar: { short: {}, long: {} } }],
  ["exec", { grammar: { short: { ...flags("cl"), a: "value" }, long: {} } }],
  ["coproc", {
    grammar: { short: {}, long: {} },
    // `coproc NAME { …; }` and `coproc ( … )` are compound commands the grammar splits apart.
    runs: (parsed) =>
      parsed.operands.slice(0, 2).some((word) => COMPOUND_STARTS.has(word))
        ? { _tag: "Unknown", reason: "coproc runs a compound command this runtime does not read" }
        : commandOf(parsed.operands)
  }],
  ["nohup", { grammar: { short: {}, long: longs({ flag: HELP }) } }],
  ["time", {
    grammar: { short: { ...flags("apqvV"), f: "value", o: "value" }, long: longs({ flag: ["append", "portability", "verbose", "quiet", ...HELP], value: ["format", "output"] }) }
  }],
  ["nice", { grammar: { short: { n: "value" }, long: longs({ value: ["adjustment"], flag: HELP }), numericOption: true } }],
  ["ionice", {
    grammar: { short: { ...flags("tVh"), c: "value", n: "value", p: "value", P: "value", u: "value" }, long: longs({ flag: ["ignore", ...HELP], value: ["class", "classdata", "pid", "pgid", "uid"] }) },
    runs: (parsed) => (has(parsed, "-p", "-P", "-u", "--pid", "--pgid", "--uid") ? undefined : commandOf(parsed.operands))
  }],
  ["setsid", { grammar: { short: flags("cfwhV"), long: longs({ flag: ["ctty", "fork", "wait", ...HELP] }) } }],
  ["stdbuf", { grammar: { short: valued("ioe"), long: longs({ value: ["input", "output", "error"], flag: HELP }) } }],
  ["timeout", {
    grammar: { short: { k: "value", s: "value", v: "flag" }, long: longs({ value: ["kill-after", "signal"], flag: ["foreground", "preserve-status", "verbose", ...HELP] }) },
    leading: 1
  }],
  ["env", {
    grammar: {
      short: { ...flags("i0v"), u: "value", C: "value", S: "value", P: "value" },
      long: longs({
        flag: ["ignore-environment", "null", "debug", "list-signal-handling", ...HELP],
        value: ["unset", "chdir", "split-string"],
        optional: ["block-signal", "default-signal", "ignore-signal"]
      })
    },
    runs: (parsed) => {
      // `env -S 'cmd args'`: the string is split into words that come before the operands.
      const split = parsed.options.filter((option) => option.name === "-S" || option.name === "--split-string")
      const words = [...split.flatMap((option) => splitEnvString(option.value ?? "")), ...parsed.operands]
      // `env -` is `env -i`; assignments come before the command.
      let index = 0
      while (index < words.length && (words[index] === "-" || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[index]!))) index++
      return commandOf(words.slice(index))
    }
  }],
  ["sudo", {
    grammar: {
      short: { ...flags("AbEeHiKklnPSsVv"), u: "value", g: "value", C: "value", D: "value", h: "optional", p: "value", r: "value", t: "value", U: "value", T: "value", R: "value" },
      long: longs({
        flag: ["askpass", "background", "edit", "set-home", "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell", "validate", ...HELP],
        value: ["user", "group", "close-from", "chdir", "prompt", "role", "type", "other-user", "command-timeout", "chroot"],
        optional: ["preserve-env", "host"]
      })
    },
    runs: (parsed) => {
      if (has(parsed, "-e", "--edit", "-l", "--list", "-v", "--validate", "-k", "-K", "-V")) return undefined
      // `sudo -s cmd args` / `sudo -i cmd args` run the words as a script in the target user's shell.
      if (has(parsed, "-s", "--shell", "-i", "--login")) {
        return parsed.operands.length > 0 ? { _tag: "Script", script: parsed.operands.join(" ") } : { _tag: "Stdin" }
      }
      return commandOf(parsed.operands)
    }
  }],
  ["doas", {
    grammar: { short: { ...flags("nsL"), u: "value", C: "value" }, long: {} },
    runs: (parsed) => (has(parsed, "-s") ? { _tag: "Stdin" } : has(parsed, "-C", "-L") ? undefined : commandOf(parsed.operands))
  }],
  ["pkexec", { grammar: { short: {}, long: longs({ value: ["user"], flag: ["disable-internal-agent", "keep-cwd", ...HELP] }) } }],
  ["xargs", {
    grammar: {
      short: { ...flags("0prtxo"), a: "value", d: "value", E: "value", e: "optional", i: "optional", I: "value", l: "optional", L: "value", n: "value", P: "value", s: "value" },
      long: longs({
        flag: ["null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits", ...HELP],
        value: ["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
        optional: ["eof", "replace", "max-lines"]
      })
    },
    // With no command, xargs runs echo. With -I R, every R in the command is replaced by input.
    runs: (parsed) => {
      const replace = parsed.options.findLast((option) => ["-I", "-i", "--replace"].includes(option.name))
      const marker = replace === undefined ? undefined : (replace.value ?? "{}")
      const operands = marker === undefined || marker === ""
        ? parsed.operands
        : parsed.operands.map((word) => word.replaceAll(marker, "${XARGS_INPUT}"))
      return commandOf(operands.length > 0 ? operands : ["echo"])
    }
  }],
  ["watch", {
    grammar: {
      short: { ...flags("bceghtvwpxqr"), d: "optional", n: "value", q: "value" },
      long: longs({ flag: ["beep", "color", "no-color", "errexit", "chgexit", "no-title", "precise", "no-wrap", "exec", "no-rerun", ...HELP], value: ["interval", "equexit"], optional: ["differences"] })
    },
    // Without -x the words are joined and run by `sh -c`.
    runs: (parsed) =>
      has(parsed, "-x", "--exec") ? commandOf(parsed.operands) : parsed.operands.length > 0 ? { _tag: "Script", script: parsed.operands.join(" ") } : undefined
  }],
  ["su", { grammar: SU_GRAMMAR, runs: suRuns }],
  ["runuser", { grammar: SU_GRAMMAR, runs: suRuns }],
  ["sg", {
    grammar: { short: { c: "value" }, long: {} },
    leading: 1,
    // `sg group -c 'cmd'` or `sg group cmd args`: the words are a script for /bin/sh.
    runs: (parsed) => {
      const words = parsed.operands[1] === "-c" ? parsed.operands.slice(2) : parsed.operands.slice(1)
      const script = valueOf(parsed, "-c") ?? (words.length > 0 ? words.join(" ") : undefined)
      return script === undefined ? { _tag: "Stdin" } : { _tag: "Script", script }
    }
  }],
  ["script", {
    grammar: {
      short: { ...flags("aefqhV"), c: "value", E: "value", I: "value", O: "value", B: "value", T: "value", t: "optional", m: "value", o: "value" },
      long: longs({ flag: ["append", "return", "flush", "force", "quiet", ...HELP], value: ["command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"], optional: ["timing"] }),
      permute: true
    },
    runs: (parsed) => {
      const script = valueOf(parsed, "-c", "--command")
      return script === undefined ? { _tag: "Stdin" } : { _tag: "Script", script }
    }
  }],
  ["flock", {
    grammar: {
      short: { ...flags("sexnuoFhV"), w: "value", E: "value", c: "value" },
      long: longs({ flag: ["shared", "exclusive", "nonblock", "unlock", "close", "no-fork", "verbose", ...HELP], value: ["timeout", "wait", "conflict-exit-code", "command"] })
    },
    runs: (parsed) => {
      const script = valueOf(parsed, "-c", "--command")
      if (script !== undefined) return { _tag: "Script", script }
      // `flock FILE -c 'cmd'` / `flock FILE cmd args` / `flock FD` (no command).
      const [, next, ...rest] = parsed.operands
      if (next === "-c" || next === "--command") return rest[0] === undefined ? undefined : { _tag: "Script", script: rest[0] }
      return commandOf(parsed.operands.slice(1))
    }
  }],
  ["taskset", {
    grammar: { short: flags("acpVh"), long: longs({ flag: ["all-tasks", "cpu-list", "pid", ...HELP] }) },
    runs: (parsed) => (has(parsed, "-p", "--pid") ? undefined : commandOf(parsed.operands.slice(1)))
  }],
  ["chrt", {
    grammar: {
      short: { ...flags("abdefimoprRvhV"), T: "value", P: "value", D: "value" },
      long: longs({
        flag: ["all-tasks", "batch", "deadline", "ext", "fifo", "idle", "max", "other", "pid", "rr", "reset-on-fork", "verbose", ...HELP],
        value: ["sched-runtime", "sched-period", "sched-deadline"]
      })
    },
    runs: (parsed) => {
      if (has(parsed, "-p", "--pid", "-m", "--max")) return undefined
      const operands = /^\d+$/.test(parsed.operands[0] ?? "") ? parsed.operands.slice(1) : parsed.operands
      return commandOf(operands)
    }
  }],
  ["unshare", {
    grammar: {
      short: { ...flags("fhVmuinpCTUrcl"), R: "value", w: "value", S: "value", G: "value" },
      long: longs({
        flag: ["fork", "map-root-user", "map-current-user", "map-auto", "keep-caps", "kill-child", ...HELP],
        value: ["root", "wd", "setuid", "setgid", "map-user", "map-group", "map-users", "map-groups", "setgroups", "propagation", "monotonic", "boottime", "load-interp"],
        optional: ["mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "mount-proc", "mount-binfmt"]
      })
    },
    runs: (parsed) => commandOf(parsed.operands) ?? { _tag: "Stdin" }
  }],
  ["nsenter", {
    grammar: {
      short: { ...flags("aFZehV"), t: "value", m: "optional", u: "optional", i: "optional", n: "optional", p: "optional", C: "optional", U: "optional", T: "optional", S: "value", G: "value", r: "optional", w: "optional", W: "optional" },
      long: longs({
        flag: ["all", "no-fork", "follow-context", "preserve-credentials", "env", ...HELP],
        value: ["target", "setuid", "setgid", "join-cgroup"],
        optional: ["mount", "uts", "ipc", "net", "pid", "cgroup", "user", "time", "root", "wd", "wdns", "user-parent"]
      })
    },
    runs: (parsed) => commandOf(parsed.operands) ?? { _tag: "Stdin" }
  }],
  ["chroot", {
    grammar: { short: {}, long: longs({ value: ["userspec", "groups"], flag: ["skip-chdir", ...HELP] }) },
    runs: (parsed) => (parsed.operands.length > 1 ? commandOf(parsed.operands.slice(1)) : { _tag: "Stdin" })
  }],
  ["setpriv", {
    grammar: {
      short: flags("dhV"),
      long: longs({
        flag: ["dump", "no-new-privs", "nnp", "clear-groups", "keep-groups", "init-groups", "reset-env", ...HELP],
        value: ["reuid", "regid", "ruid", "rgid", "euid", "egid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits", "pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "ptracer"]
      })
    }
  }],
  ["setarch", {
    grammar: { short: flags("vRFZLXBIST3h"), long: longs({ flag: ["verbose", "addr-no-randomize", "fdpic-funcptrs", "mmap-page-zero", "addr-compat-layout", "read-implies-exec", "32bit", "short-inode", "whole-seconds", "sticky-timeouts", "3gb", "4gb", "uname-2.6", "list", ...HELP] }), permute: false },
    // `setarch ARCH [options] cmd`: the architecture comes first, then its own options.
    runs: (parsed) => {
      const rest = parseOptions(parsed.operands.slice(1), { short: flags("vRFZLXBIST3"), long: {} })
      return typeof rest === "string" ? { _tag: "Unknown", reason: `setarch with the option ${rest}` } : commandOf(rest.operands) ?? { _tag: "Stdin" }
    }
  }],
  ["strace", {
    grammar: {
      short: { ...flags("cdDfFhikqrtTvVwxyzZCn"), a: "value", b: "value", e: "value", E: "value", I: "value", o: "value", O: "value", p: "value", P: "value", s: "value", S: "value", u: "value", U: "value", X: "value" },
      long: longs({ flag: ["follow-forks", "output-separately", "summary-only", "summary", ...HELP], value: ["trace", "signal", "status", "output", "attach", "string-limit", "user", "env", "columns", "trace-path"] })
    },
    runs: (parsed) => (has(parsed, "-p", "--attach") ? undefined : commandOf(parsed.operands))
  }],
  ["ltrace", {
    grammar: { short: { ...flags("bcCfhiLrStTV"), a: "value", A: "value", D: "value", e: "value", F: "value", l: "value", n: "value", o: "value", p: "value", s: "value", u: "value", w: "value", x: "value" }, long: longs({ flag: HELP, value: ["output"] }) },
    runs: (parsed) => (has(parsed, "-p") ? undefined : commandOf(parsed.operands))
  }],
  ["catchsegv", { grammar: { short: {}, long: {} } }],
  ["eatmydata", { grammar: { short: {}, long: {} } }],
  ["torsocks", { grammar: { short: { ...flags("iqdh"), u: "value", p: "value", a: "value", P: "value" }, long: longs({ flag: ["isolate", "quiet", "debug", ...HELP], value: ["user", "pass", "address", "port"] }) } }],
  ["proxychains", { grammar: { short: { q: "flag", f: "value" }, long: {} } }],
  ["proxychains4", { grammar: { short: { q: "flag", f: "value" }, long: {} } }],
  ["fakeroot", { grammar: { short: { ...flags("uhv"), l: "value", s: "value", i: "value", b: "value" }, long: longs({ value: ["lib", "faked"], flag: ["unknown-is-real", ...HELP] }) } }],
  ["faketime", { grammar: { short: { ...flags("fm"), p: "value" }, long: longs({ flag: ["exclude-monotonic", "date-prog", ...HELP] }) }, leading: 1 }],
  ["dbus-run-session", { grammar: { short: {}, long: longs({ value: ["config-file", "dbus-daemon"], flag: HELP }) } }],
  ["xvfb-run", {
    grammar: { short: { ...flags("ahl"), n: "value", s: "value", f: "value", e: "value", p: "value", w: "value" }, long: longs({ flag: ["auto-servernum", "auto-display", "listen-tcp", "help"], value: ["server-num", "server-args", "auth-file", "error-file", "xauth-protocol", "wait"] }) }
  }],
  ["tini", { grammar: { short: { ...flags("svgwlh"), p: "value", e: "value" }, long: {} } }],
  ["dumb-init", { grammar: { short: flags("cvVh"), long: longs({ flag: ["single-child", "verbose", ...HELP], value: ["rewrite"] }) } }],
  ["unbuffer", { grammar: { short: flags("p"), long: {} } }],
  ["busybox", { grammar: { short: {}, long: longs({ flag: ["list", "list-full", "help"], value: ["install"] }) } }],
  ["cgexec", { grammar: { short: { g: "value" }, long: longs({ flag: ["sticky"] }) } }],
  ["numactl", {
    grammar: {
      short: { ...flags("alsHSh"), C: "value", N: "value", m: "value", i: "value", p: "value", P: "value", b: "value", w: "value" },
      long: longs({ flag: ["all", "localalloc", "show", "hardware", "huge", ...HELP], value: ["physcpubind", "cpunodebind", "membind", "interleave", "preferred", "preferred-many", "balancing", "weighted-interleave"] })
    }
  }],
  ["prlimit", {
    grammar: {
      short: { ...flags("hV"), p: "value", o: "value" },
      long: longs({ flag: ["noheadings", "raw", "verbose", ...HELP], value: ["pid", "output"], optional: ["as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"] })
    },
    runs: (parsed) => (has(parsed, "-p", "--pid") ? undefined : commandOf(parsed.operands))
  }],
  ["chpst", {
    grammar: { short: { ...flags("vPV0123"), u: "value", U: "value", b: "value", e: "value", "/": "value", C: "value", n: "value", l: "value", L: "value", m: "value", d: "value", o: "value", p: "value", f: "value", c: "value", t: "value" }, long: {} }
  }],
  ["trickle", { grammar: { short: { ...flags("hsvV"), d: "value", u: "value", w: "value", t: "value", l: "value", n: "value" }, long: {} } }],
  ["schroot", {
    grammar: { short: { ...flags("hVliepq"), c: "value", u: "value", d: "value", r: "value", b: "value", e: "value", o: "value" }, long: longs({ flag: ["list", "info", "config", "location", "quiet", "preserve-environment", "automatic-session", "begin-session", "end-session", "recover-session", ...HELP], value: ["chroot", "user", "directory", "option", "run-session"] }) },
    runs: (parsed) => commandOf(parsed.operands) ?? { _tag: "Stdin" }
  }],
])

/**
 * Runners whose grammar is too rich to read here: what they run is unknown. They are named so
 * a deny rule is not walked around through them; a rule that allows them allows what they run.
 */
const OPAQUE_RUNNERS: ReadonlyMap<string, string> = new Map([
  ["parallel", "GNU parallel builds its commands from its input"],
  ["sem", "GNU parallel's sem builds its commands from its input"],
  ["bwrap", "bwrap's options take one to three values each"],
  ["systemd-run", "systemd-run's options are not read here"],
  ["start-stop-daemon", "start-stop-daemon's options are not read here"],
  ["daemonize", "daemonize's options are not read here"],
  ["rlwrap", "rlwrap's options are not read here"],
  ["firejail", "firejail's options are not read here"],
  ["expect", "expect runs a script of its own language"]
])

/** Builtins that run text later or elsewhere. */
const SPECIAL: ReadonlyMap<string, (args: ReadonlyArray<string>) => Runs | undefined> = new Map<string, (args: ReadonlyArray<string>) => Runs | undefined>([
  // `trap 'cmd' EXIT` runs the script when the signal comes; `trap -p`/`-l` only print.
  ["trap", (args) => {
    const operands = args[0] === "--" ? args.slice(1) : args
    if (operands.length === 0 || /^-[lpP]$/.test(operands[0]!)) return undefined
    return operands[0] === "-" || operands[0] === "" ? undefined : { _tag: "Script", script: operands[0]! }
  }],
  // `alias x='rm -rf'`: whatever later uses the alias runs its value.
  ["alias", (args) => {
    const values = args.filter((arg) => arg.includes("=")).map((arg) => arg.slice(arg.indexOf("=") + 1))
    return values.length > 0 ? { _tag: "Script", script: values.join("\n") } : undefined
  }],
  // `source FILE` runs a file, which is the sandbox's business; `source /dev/stdin` runs its input.
  ...["source", "."].map((name) => [name, (args: ReadonlyArray<string>): Runs | undefined => {
    const file = args[0] === "--" ? args[1] : args[0]
    if (file === undefined) return undefined
    if (isStdinFile(file)) return { _tag: "Stdin" }
    if (/^[<>]\(/.test(file)) return { _tag: "Unknown", reason: `the script ${file} is the output of a command` }
    return undefined
  }] as const),
  // `hash -p /bin/rm ls` makes `ls` run /bin/rm.
  ["hash", (args) => {
    const at = args.indexOf("-p")
    return at === -1 || args[at + 1] === undefined ? undefined : { _tag: "Command", tokens: [args[at + 1]!] }
  }]
])

/** `ip netns exec NAME cmd`, `ip vrf exec NAME cmd`. */
const ipExec = (args: ReadonlyArray<string>): Runs | undefined => {
  const at = args.findIndex((word, index) => (word === "netns" || word === "vrf") && args[index + 1] === "exec")
  return at === -1 ? undefined : commandOf(args.slice(at + 3))
}

/** `gdb … --args prog args` runs the program. */
const gdbArgs = (args: ReadonlyArray<string>): Runs | undefined => {
  const at = args.indexOf("--args")
  return at === -1 ? undefined : commandOf(args.slice(at + 1))
}

/** The name a command runs as: the basename of a path (`/usr/bin/../bin/rm` → `rm`). */
export const commandName = (word: string): string => {
  if (!word.includes("/")) return word
  const base = path.posix.basename(path.posix.normalize(word))
  return base === "" || base === "." || base === ".." ? word : base
}

/**
 * What `tokens` (a command's words) runs besides itself: undefined for a command that runs
 * nothing else (or runs a named script file: what the file does is not the rules' business).
 */
export const runsOf = (tokens: ReadonlyArray<string>): Runs | undefined => {
  const [first, ...args] = tokens
  if (first === undefined) return undefined
  const name = commandName(first)
  if (name === "eval") return args.length > 0 ? { _tag: "Script", script: args.join(" ") } : undefined
  const special = SPECIAL.get(name)
  if (special !== undefined) return special(args)
  if (name === "ip") return ipExec(args)
  if (name === "gdb") return gdbArgs(args)
  const opaque = OPAQUE_RUNNERS.get(name)
  if (opaque !== undefined) return { _tag: "Unknown", reason: opaque }
  const wrapper = WRAPPERS.get(name)
  if (wrapper === undefined) return undefined
  const parsed = parseOptions(args, wrapper.grammar)
  if (typeof parsed === "string") {
    return { _tag: "Unknown", reason: `${name} is given the option ${parsed}, which this runtime cannot read, so where its command starts is not known` }
  }
  if (wrapper.runs) return wrapper.runs(parsed, name)
  return commandOf(parsed.operands.slice(wrapper.leading ?? 0))
}

/** Whether `name` is a known command that runs other commands (for the docs and tests). */
export const isWrapper = (name: string): boolean => WRAPPERS.has(name) || OPAQUE_RUNNERS.has(name) || name === "eval"

/** Every name known to run other commands. */
export const wrapperNames = (): ReadonlyArray<string> => [...new Set([...WRAPPERS.keys(), ...OPAQUE_RUNNERS.keys(), "eval", "ip", "gdb"])]
