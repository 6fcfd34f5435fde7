import * as fs from "node:fs"
import Module from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as vm from "node:vm"

/**
 * Why: a quarter to a third of the CPU of a short `agent run` was V8 parsing and compiling the bundle.
 *
 * V8's code cache for the bundled CLI. Without it every run parses the bundle's ~7 MB of
 * JavaScript again and compiles each function it calls to bytecode on first use; a quarter to a
 * third of the CPU of a short `agent run` went there. Node 20 has no compile cache of its own
 * (`module.enableCompileCache` came with Node 22), so the bundle is CommonJS and its files are
 * compiled here with `vm.Script` and the bytecode V8 produced in an earlier run of the same
 * command.
 *
 * - A file's cache is written when the process exits and only when it was missing or V8 turned
 *   it down (another Node version, other V8 flags): by then it holds the bytecode of every
 *   function the run used, not only the top level. Writing costs tens of milliseconds, so a
 *   valid cache is never rewritten.
 * - One cache per command (`run`, `serve`, `session`, ...): each uses different parts of the
 *   same chunks, and a cache made by `agent --help` would leave `agent run` compiling.
 * - V8 checks a cache against the source's length only, so the file's size and modification
 *   time are part of the cache's name: a rebuilt file never meets bytecode of another text.
 * - The cache sits beside the bundle (a rebuild removes it), or under `$XDG_CACHE_HOME/agent`
 *   when the bundle's directory is read-only. Files are written whole and renamed into place,
 *   so concurrent processes never read a half-written one. Any failure means no cache, never
 *   a failed command. `AGENT_NO_COMPILE_CACHE=1` turns it off.
 */
export const install = (
  bundleDir: string,
  command: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  /** Just before the cache is written: V8 stamps it with the flags then set (see EngineFlags.ts). */
  beforeWrite: () => void = () => undefined
) => {
  if (env.AGENT_NO_COMPILE_CACHE) return
  const root = cacheRoot(bundleDir, env)
  if (!root) return
  const dir = path.join(root, `${process.version}-${process.arch}`, command && /^[a-z][a-z-]{0,30}$/.test(command) ? command : "default")
  const prefix = bundleDir.endsWith(path.sep) ? bundleDir : bundleDir + path.sep
  const fresh: Array<{ readonly script: vm.Script; readonly file: string }> = []
  const modulePrototype = Module.prototype as unknown as CompilingModule
  const compile = modulePrototype._compile

  modulePrototype._compile = function(this: CompilingModule, content: string, filename: string) {
    if (!filename.startsWith(prefix)) return compile.call(this, content, filename)
    let file = ""
    let cachedData: Buffer | undefined
    try {
      file = path.join(dir, `${path.basename(filename)}-${content.length}-${Math.floor(fs.statSync(filename).mtimeMs)}`)
      cachedData = fs.readFileSync(file)
    } catch {
      // No cache yet (or no file to key it by).
    }
    // No `import()` in these files (bundle.mjs routes them through the startup file): Node 20
    // loses the import callback of code that came from the cache.
    const script = new vm.Script(Module.wrap(content), { filename, ...(cachedData ? { cachedData } : {}) })
    if (file && (cachedData === undefined || script.cachedDataRejected)) fresh.push({ script, file })
    const wrapper = script.runInThisContext({ displayErrors: true }) as (...args: ReadonlyArray<unknown>) => unknown
    const require = ((id: string) => this.require(id)) as NodeJS.Require
    require.resolve = ((request: string, options?: { paths?: Array<string> }) =>
      (Module as unknown as ModuleInternals)._resolveFilename(request, this, false, options)) as NodeJS.RequireResolve
    require.cache = (Module as unknown as ModuleInternals)._cache
    require.main = process.mainModule
    return wrapper.call(this.exports, this.exports, require, this, filename, path.dirname(filename))
  }

  process.once("exit", () => {
    if (fresh.length === 0) return
    try {
      beforeWrite()
      fs.mkdirSync(dir, { recursive: true })
      for (const { file, script } of fresh) {
        const temporary = `${file}.${process.pid}.tmp`
        fs.writeFileSync(temporary, script.createCachedData())
        fs.renameSync(temporary, file)
      }
    } catch {
      // A cache that cannot be written is a slower next start, nothing more.
    }
  })
}

/** Beside the bundle when that is writable, else the user's cache directory. */
const cacheRoot = (bundleDir: string, env: NodeJS.ProcessEnv) => {
  try {
    fs.accessSync(bundleDir, fs.constants.W_OK)
    return path.join(bundleDir, ".compile-cache")
  } catch {
    const home = env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache")
    // One directory per installed bundle.
    return home ? path.join(home, "agent", "compile-cache", bundleDir.replace(/[^A-Za-z0-9]+/g, "_").slice(-120)) : undefined
  }
}

/** What Node's CommonJS loader uses of a module while compiling it (not in @types/node). */
interface CompilingModule {
  _compile(content: string, filename: string): unknown
  require(id: string): unknown
  exports: unknown
}

interface ModuleInternals {
  _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: { paths?: Array<string> }): string
  _cache: NodeJS.Require["cache"]
}
