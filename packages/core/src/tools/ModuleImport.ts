import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

// Importing a custom tool's file: JavaScript as is, TypeScript through esbuild, both under a time limit.

/** A module whose top level never finishes must not hold up the runtime. */
const IMPORT_TIMEOUT_MS = 15_000

interface Transformer {
  readonly transform: (
    code: string,
    options: { loader: "ts"; format: "esm"; sourcefile: string; target: string; sourcemap: "inline" }
  ) => Promise<{ readonly code: string }>
}

const isTransformer = (value: unknown): value is Transformer =>
  typeof value === "object" && value !== null && "transform" in value && typeof value.transform === "function"

const esbuildByBase = new Map<string, Transformer | undefined>()

/**
 * esbuild, resolved from this package, the project or the config dirs. When nothing depends
 * on it directly it is usually still installed with tsx or vite, so those are asked too.
 */
const findEsbuild = (bases: ReadonlyArray<string>): Transformer | undefined => {
  const key = bases.join("\0")
  if (esbuildByBase.has(key)) return esbuildByBase.get(key)
  let found: Transformer | undefined
  const attempt = (base: string, specifier: string) => {
    try {
      const require = createRequire(base)
      const loaded: unknown = require(require.resolve(specifier))
      if (isTransformer(loaded)) found = loaded
    } catch {
      // not resolvable from here
    }
  }
  for (const base of bases) {
    attempt(base, "esbuild")
    if (found) break
    for (const host of ["tsx", "vite"]) {
      try {
        const manifest = fs.realpathSync(createRequire(base).resolve(`${host}/package.json`))
        attempt(manifest, "esbuild")
      } catch {
        // host not installed
      }
      if (found) break
    }
    if (found) break
  }
  esbuildByBase.set(key, found)
  return found
}

class LoadProblem extends Error {}

const withTimeout = <A>(promise: Promise<A>, what: string): Promise<A> => {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LoadProblem(`${what} did not finish within ${IMPORT_TIMEOUT_MS / 1000} s`)), IMPORT_TIMEOUT_MS)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/**
 * Imports a module file. TypeScript is transpiled to a hidden `.mjs` next to the source (so
 * its relative and package imports resolve as written), imported, and removed again.
 */
export const importModule = async (file: string, bases: ReadonlyArray<string>): Promise<Record<string, unknown>> => {
  const stat = await fs.promises.stat(file)
  if (!file.endsWith(".ts")) {
    return withTimeout(import(`${pathToFileURL(file).href}?mtime=${stat.mtimeMs}`), "importing the module")
  }
  const esbuild = findEsbuild(bases)
  if (!esbuild) {
    throw new LoadProblem(
      "TypeScript tools need esbuild to be transpiled, and it could not be found; install esbuild or write the tool in JavaScript"
    )
  }
  const source = await fs.promises.readFile(file, "utf8")
  let code: string
  try {
    code = (await esbuild.transform(source, {
      loader: "ts",
      format: "esm",
      sourcefile: file,
      target: "node20",
      sourcemap: "inline"
    })).code
  } catch (error) {
    throw new LoadProblem(`TypeScript could not be transpiled: ${error instanceof Error ? error.message : String(error)}`)
  }
  const temporary = path.join(path.dirname(file), `.${path.basename(file, ".ts")}.${randomBytes(6).toString("hex")}.mjs`)
  await fs.promises.writeFile(temporary, code)
  try {
    return await withTimeout(import(pathToFileURL(temporary).href), "importing the module")
  } finally {
    await fs.promises.rm(temporary, { force: true })
  }
}

export const describeError = (error: unknown): string => {
  if (error instanceof LoadProblem) return error.message
  // Errors may come from another realm (or a bundler) and fail `instanceof Error`.
  if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
    const name = "name" in error && typeof error.name === "string" && error.name !== "Error" ? `${error.name}: ` : ""
    return `${name}${error.message}`
  }
  return String(error)
}
