import { install } from "./CodeCache.js"
import { atStartup, startupFlagsAgain } from "./EngineFlags.js"

/**
 * Why: the engine flags must be set before the code cache is read (a cache made under other flags is
 * turned down), and both before the bundle's first file loads.
 *
 * The bundled bin's first step, before any file of the bundle is loaded (bundle.mjs writes the
 * bin, which calls this and then loads the CLI): V8's flags first, since a code cache made
 * under other flags is turned down, then the code cache.
 */
export const start = (bundleDir: string) => {
  atStartup()
  // The bundle's dynamic imports (user tool files, Node built-ins) are made here, in a file Node
  // compiles itself (see bundle.mjs).
  Object.assign(globalThis, { [Symbol.for("@agent/cli/import")]: (specifier: string) => import(specifier) })
  install(bundleDir, process.argv[2], process.env, startupFlagsAgain)
}
