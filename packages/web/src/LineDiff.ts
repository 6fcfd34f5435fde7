/**
 * A line diff of two texts for the changes view: the shortest edit script (Myers) over lines,
 * grouped into hunks with context, and laid out as unified or side-by-side rows. Pure functions.
 */

export type DiffLine =
  | { readonly kind: "same"; readonly text: string; readonly oldNo: number; readonly newNo: number }
  | { readonly kind: "del"; readonly text: string; readonly oldNo: number }
  | { readonly kind: "add"; readonly text: string; readonly newNo: number }

export interface Hunk {
  readonly oldStart: number
  readonly oldLines: number
  readonly newStart: number
  readonly newLines: number
  readonly lines: ReadonlyArray<DiffLine>
}

const splitLines = (text: string): Array<string> => {
  if (text === "") return []
  const lines = text.split("\n")
  if (lines.at(-1) === "") lines.pop()
  return lines
}

/** Beyond this many differing lines the diff is shown as all removed, then all added (still correct, less minimal). */
const MAX_EDIT = 4000

/** Every line of both texts in order, as kept, removed or added (Myers' O(ND) algorithm). */
export const diffLines = (before: string, after: string): ReadonlyArray<DiffLine> => {
  const a = splitLines(before)
  const b = splitLines(after)
  // Common head and tail first: most edits touch a few lines of a long file.
  let head = 0
  while (head < a.length && head < b.length && a[head] === b[head]) head++
  let tail = 0
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++
  const midA = a.slice(head, a.length - tail)
  const midB = b.slice(head, b.length - tail)
  const out: Array<DiffLine> = []
  for (let i = 0; i < head; i++) out.push({ kind: "same", text: a[i]!, oldNo: i + 1, newNo: i + 1 })
  const middle = editScript(midA, midB)
  let oldNo = head
  let newNo = head
  for (const op of middle) {
    if (op === "same") out.push({ kind: "same", text: midA[oldNo - head]!, oldNo: ++oldNo, newNo: ++newNo })
    else if (op === "del") out.push({ kind: "del", text: midA[oldNo - head]!, oldNo: ++oldNo })
    else out.push({ kind: "add", text: midB[newNo - head]!, newNo: ++newNo })
  }
  for (let i = 0; i < tail; i++) {
    out.push({ kind: "same", text: a[a.length - tail + i]!, oldNo: a.length - tail + i + 1, newNo: b.length - tail + i + 1 })
  }
  return out
}

type Op = "same" | "del" | "add"

const editScript = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): Array<Op> => {
  const n = a.length
  const m = b.length
  if (n === 0) return Array<Op>(m).fill("add")
  if (m === 0) return Array<Op>(n).fill("del")
  const max = Math.min(n + m, MAX_EDIT)
  const offset = max
  const v = new Int32Array(2 * max + 2)
  const trace: Array<Int32Array> = []
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice())
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      v[offset + k] = x
      if (x >= n && y >= m) return backtrack(trace, offset, n, m, d)
    }
  }
  return [...Array<Op>(n).fill("del"), ...Array<Op>(m).fill("add")]
}

const backtrack = (trace: ReadonlyArray<Int32Array>, offset: number, n: number, m: number, depth: number): Array<Op> => {
  const ops: Array<Op> = []
  let x = n
  let y = m
  for (let d = depth; d > 0; d--) {
    const v = trace[d]!
    const k = x - y
    const prevK = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? k + 1 : k - 1
    const prevX = v[offset + prevK]!
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      ops.push("same")
      x--
      y--
    }
    ops.push(x === prevX ? "add" : "del")
    x = prevX
    y = prevY
  }
  while (x > 0 && y > 0) {
    ops.push("same")
    x--
    y--
  }
  return ops.reverse()
}

/** The changed lines with `context` kept lines around them, as hunks; kept lines far from a change are left out. */
export const hunks = (lines: ReadonlyArray<DiffLine>, context = 3): ReadonlyArray<Hunk> => {
  const changed = lines.map((line, index) => (line.kind === "same" ? -1 : index)).filter((index) => index >= 0)
  if (changed.length === 0) return []
  const ranges: Array<[number, number]> = []
  for (const index of changed) {
    const start = Math.max(0, index - context)
    const end = Math.min(lines.length - 1, index + context)
    const last = ranges.at(-1)
    if (last && start <= last[1] + 1) last[1] = Math.max(last[1], end)
    else ranges.push([start, end])
  }
  return ranges.map(([start, end]) => {
    const slice = lines.slice(start, end + 1)
    const oldLines = slice.filter((line) => line.kind !== "add").length
    const newLines = slice.filter((line) => line.kind !== "del").length
    const firstOld = slice.find((line) => line.kind !== "add") as { oldNo: number } | undefined
    const firstNew = slice.find((line) => line.kind !== "del") as { newNo: number } | undefined
    return {
      oldStart: firstOld?.oldNo ?? 0,
      oldLines,
      newStart: firstNew?.newNo ?? 0,
      newLines,
      lines: slice
    }
  })
}

/** One row of the side-by-side view: the old line on the left, the new one on the right (either may be blank). */
export interface SplitRow {
  readonly left?: DiffLine
  readonly right?: DiffLine
}

/** Pairs each run of removed lines with the added lines that follow it, row by row. */
export const splitRows = (lines: ReadonlyArray<DiffLine>): ReadonlyArray<SplitRow> => {
  const rows: Array<SplitRow> = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i]!
    if (line.kind === "same") {
      rows.push({ left: line, right: line })
      i++
      continue
    }
    const dels: Array<DiffLine> = []
    const adds: Array<DiffLine> = []
    while (i < lines.length && lines[i]!.kind === "del") dels.push(lines[i++]!)
    while (i < lines.length && lines[i]!.kind === "add") adds.push(lines[i++]!)
    for (let j = 0; j < Math.max(dels.length, adds.length); j++) {
      rows.push({ ...(dels[j] ? { left: dels[j] } : {}), ...(adds[j] ? { right: adds[j] } : {}) })
    }
  }
  return rows
}

/** The `@@ -a,b +c,d @@` header of a hunk. */
export const hunkHeader = (hunk: Hunk): string => `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`
