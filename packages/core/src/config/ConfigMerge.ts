import type { ConfigSource } from "@agent/domain"
import { isObject, type JsonObject, type Path, pathKey } from "./ConfigFiles.js"

// Provenance

/** Which source set each value path. Objects point at the last source that merged into them. */
export class Provenance {
  private readonly entries = new Map<string, { readonly path: Path; readonly source: ConfigSource }>()

  set(p: Path, source: ConfigSource | undefined): void {
    if (source !== undefined) this.entries.set(pathKey(p), { path: p, source })
  }

  /** Forgets `prefix` and everything below it. */
  drop(prefix: Path): void {
    const exact = pathKey(prefix)
    const below = exact.slice(0, -1) + ","
    for (const key of this.entries.keys()) {
      if (key === exact || key.startsWith(below)) this.entries.delete(key)
    }
  }

  /** Removes and returns the entries at and below `prefix`. */
  extract(prefix: Path): Provenance {
    const out = new Provenance()
    const exact = pathKey(prefix)
    const below = exact.slice(0, -1) + ","
    for (const [key, entry] of this.entries) {
      if (key === exact || key.startsWith(below)) {
        out.entries.set(key, entry)
        this.entries.delete(key)
      }
    }
    return out
  }

  origin(p: Path): ConfigSource | undefined {
    for (let i = p.length; i > 0; i--) {
      const entry = this.entries.get(pathKey(p.slice(0, i)))
      if (entry !== undefined) return entry.source
    }
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------
// Merge

export type SourceAt = (p: Path) => ConfigSource | undefined

export const dedupeKey = (u: unknown): string => (typeof u === "string" ? u : JSON.stringify(u))

/** Top-level lists that sources add to instead of replacing: `instructions` (without duplicates) and `plugin`. */
export const CONCATENATED: ReadonlyMap<string, { readonly dedupe: boolean }> = new Map([
  ["instructions", { dedupe: true }],
  // Duplicates are resolved once everything is merged: the same plugin at another version is one too.
  ["plugin", { dedupe: false }]
])

/**
 * Deep merge of `patch` into `target`: objects key by key (an existing key keeps its position),
 * arrays and scalars replaced, top-level `instructions` and `plugin` concatenated.
 */
export const mergeInto = (target: JsonObject, patch: JsonObject, base: Path, at: SourceAt, prov: Provenance): void => {
  for (const key of Object.keys(patch)) {
    if (key === "__proto__") continue
    const value = patch[key]
    const p = [...base, key]
    const existing = target[key]
    const concatenated = base.length === 0 ? CONCATENATED.get(key) : undefined
    if (concatenated !== undefined && Array.isArray(value)) {
      const list: Array<unknown> = Array.isArray(existing) ? existing : []
      if (!Array.isArray(existing)) {
        if (existing !== undefined) prov.drop(p)
        target[key] = list
      }
      const seen = new Set(list.map(dedupeKey))
      value.forEach((item, index) => {
        const k = dedupeKey(item)
        if (concatenated.dedupe && seen.has(k)) return
        seen.add(k)
        prov.set([...p, String(list.length)], at([...p, String(index)]))
        list.push(item)
      })
      prov.set(p, at(p))
      continue
    }
    if (isObject(value)) {
      let into: JsonObject
      if (isObject(existing)) {
        into = existing
      } else {
        if (existing !== undefined) prov.drop(p)
        into = {}
        target[key] = into
      }
      // An object remembers the last source that touched it: the answer for paths below it
      // that no source set (a missing key, a whole agent).
      prov.set(p, at(p))
      mergeInto(into, value, p, at, prov)
    } else {
      if (existing !== undefined) prov.drop(p)
      target[key] = Array.isArray(value) ? value.slice() : value
      prov.set(p, at(p))
    }
  }
}

