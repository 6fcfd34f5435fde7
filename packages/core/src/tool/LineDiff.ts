import { diffArrays } from "diff"

/**
 * A line diff whose cost stays near-linear however large the files and however many changes.
 * jsdiff's Myers search costs about (lines × edits): a replaceAll that changes 34 000 lines of a
 * 1.6 MB file would run for minutes, and even 340 scattered changes cost most of a second. So
 * Myers runs only within a work budget; past it, patience diffing splits the lines at lines that
 * occur once on each side, in order (found in O(n log n)), and diffs the gaps between them the
 * same way. A gap with no such line pairs its lines one to one (as many on each side) or is shown
 * as removed then added: a correct diff, only not always the shortest. Small inputs take the
 * Myers path whole and get exactly jsdiff's `diffLines` result.
 */

/** Token comparisons the Myers search may spend on one segment (about (lines) × (edits)), ~20 ms. */
export const MYERS_WORK = 4_000_000
/** Patience levels before a gap is paired without further search. */
const MAX_DEPTH = 8

/** The text's lines with their `\n` (the last without, when the text does not end in one), as jsdiff splits them. */
export const tokenize = (text: string): Array<string> => {
  if (text === "") return []
  const lines = text.split("\n")
  const last = lines.pop()!
  const tokens = lines.map((line) => `${line}\n`)
  if (last !== "") tokens.push(last)
  return tokens
}

export type Kind = "same" | "added" | "removed"

/** Consecutive lines (each with its `\n`, the file's last maybe without) that the diff keeps, adds or removes. */
export interface Run {
  readonly kind: Kind
  readonly lines: Array<string>
}

/** `push(...items)` without spreading a long array onto the stack. */
const append = (target: Array<string>, items: ReadonlyArray<string>) => {
  for (const item of items) target.push(item)
}

/** Runs of tokens, adjacent runs of one kind merged. */
class Runs {
  readonly runs: Array<Run> = []

  push(kind: Kind, tokens: ReadonlyArray<string>): void {
    if (tokens.length === 0) return
    const runs = this.runs
    const last = runs[runs.length - 1]
    // jsdiff lists a replacement's removed lines before its added ones.
    if (kind === "removed" && last?.kind === "added") {
      const before = runs[runs.length - 2]
      if (before?.kind === "removed") append(before.lines, tokens)
      else runs.splice(runs.length - 1, 0, { kind, lines: [...tokens] })
      return
    }
    if (last?.kind === kind) append(last.lines, tokens)
    else runs.push({ kind, lines: [...tokens] })
  }
}

/** The runs from `before` to `after`: for inputs Myers handles within budget, the changes jsdiff's `diffLines` gives. */
export const diff = (before: string, after: string): Array<Run> => {
  const runs = new Runs()
  segment(runs, tokenize(before), tokenize(after), 0)
  return runs.runs
}

/** Lines added and removed from `before` to `after`. */
export const count = (before: string, after: string): { readonly additions: number; readonly deletions: number } => {
  let additions = 0
  let deletions = 0
  if (before === after) return { additions, deletions }
  for (const run of diff(before, after)) {
    if (run.kind === "added") additions += run.lines.length
    else if (run.kind === "removed") deletions += run.lines.length
  }
  return { additions, deletions }
}

type ArrayChanges = ReadonlyArray<{ readonly value: Array<string>; readonly added: boolean; readonly removed: boolean }>

/** Myers within the budget; undefined when it would cost more. */
const myers = (left: Array<string>, right: Array<string>): ArrayChanges | undefined => {
  const size = left.length + right.length
  const maxEditLength = Math.max(16, Math.floor(MYERS_WORK / Math.max(size, 1)))
  if (maxEditLength >= size) return diffArrays(left, right)
  return diffArrays(left, right, { maxEditLength })
}

const segment = (runs: Runs, left: Array<string>, right: Array<string>, depth: number): void => {
  if (left.length === 0 || right.length === 0) {
    runs.push("removed", left)
    runs.push("added", right)
    return
  }
  const direct = myers(left, right)
  if (direct !== undefined) {
    for (const change of direct) runs.push(change.added ? "added" : change.removed ? "removed" : "same", change.value)
    return
  }
  let head = 0
  while (head < left.length && head < right.length && left[head] === right[head]) head++
  let tail = 0
  while (tail < left.length - head && tail < right.length - head && left[left.length - 1 - tail] === right[right.length - 1 - tail]) {
    tail++
  }
  runs.push("same", left.slice(0, head))
  const oldMiddle = left.slice(head, left.length - tail)
  const newMiddle = right.slice(head, right.length - tail)
  const anchors = depth < MAX_DEPTH ? uniqueCommon(oldMiddle, newMiddle) : []
  if (anchors.length === 0) {
    pair(runs, oldMiddle, newMiddle)
  } else {
    let oldAt = 0
    let newAt = 0
    for (const [oldIndex, newIndex] of anchors) {
      segment(runs, oldMiddle.slice(oldAt, oldIndex), newMiddle.slice(newAt, newIndex), depth + 1)
      runs.push("same", [oldMiddle[oldIndex]!])
      oldAt = oldIndex + 1
      newAt = newIndex + 1
    }
    segment(runs, oldMiddle.slice(oldAt), newMiddle.slice(newAt), depth + 1)
  }
  runs.push("same", left.slice(left.length - tail))
}

/** Lines pairwise when both sides have as many (equal ones kept), else all removed then all added. */
const pair = (runs: Runs, left: ReadonlyArray<string>, right: ReadonlyArray<string>): void => {
  if (left.length !== right.length) {
    runs.push("removed", left)
    runs.push("added", right)
    return
  }
  let index = 0
  while (index < left.length) {
    const start = index
    const differ = left[index] !== right[index]
    while (index < left.length && (left[index] !== right[index]) === differ) index++
    if (differ) {
      runs.push("removed", left.slice(start, index))
      runs.push("added", right.slice(start, index))
    } else {
      runs.push("same", left.slice(start, index))
    }
  }
}

/**
 * Patience anchors: lines that occur exactly once on each side, the longest run of them that is
 * in the same order on both sides, as [old index, new index] pairs.
 */
export const uniqueCommon = (left: ReadonlyArray<string>, right: ReadonlyArray<string>): Array<readonly [number, number]> => {
  const seen = new Map<string, { left: number; right: number; at: number; rightAt: number }>()
  left.forEach((line, index) => {
    const entry = seen.get(line)
    if (entry === undefined) seen.set(line, { left: 1, right: 0, at: index, rightAt: -1 })
    else entry.left++
  })
  right.forEach((line, index) => {
    const entry = seen.get(line)
    if (entry !== undefined) {
      entry.right++
      entry.rightAt = index
    }
  })
  const pairs: Array<readonly [number, number]> = []
  for (const entry of seen.values()) if (entry.left === 1 && entry.right === 1) pairs.push([entry.at, entry.rightAt])
  pairs.sort((a, b) => a[0] - b[0])
  return longestIncreasing(pairs)
}

/** The longest subsequence increasing in the second index (patience sorting, O(n log n)). */
const longestIncreasing = (pairs: ReadonlyArray<readonly [number, number]>): Array<readonly [number, number]> => {
  const tops: Array<number> = [] // index into pairs of the top of each pile
  const previous = new Int32Array(pairs.length).fill(-1)
  for (let index = 0; index < pairs.length; index++) {
    const value = pairs[index]![1]
    let low = 0
    let high = tops.length
    while (low < high) {
      const middle = (low + high) >> 1
      if (pairs[tops[middle]!]![1] < value) low = middle + 1
      else high = middle
    }
    if (low > 0) previous[index] = tops[low - 1]!
    tops[low] = index
  }
  const result: Array<readonly [number, number]> = []
  for (let index = tops.length > 0 ? tops[tops.length - 1]! : -1; index !== -1; index = previous[index]!) result.push(pairs[index]!)
  return result.reverse()
}
