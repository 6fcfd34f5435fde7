import { Either } from "effect"
import { type Range, type StrategyName, strategies } from "./EditStrategies.js"

/**
 * Where an `oldString` sits in a file, and the edit that replaces it. Models rarely copy a
 * passage byte for byte (indentation, stray whitespace, over-escaped quotes, typography), so when
 * the exact text is not there the match is tried with strategies of increasing tolerance (see
 * EditStrategies). Pure: works on text whose line endings are already `\n`.
 */

export * from "./EditStrategies.js"

export interface Located {
  readonly strategy: StrategyName
  /** Distinct matches of the deciding strategy, by position. */
  readonly ranges: ReadonlyArray<Range>
}

export interface LocateOptions {
  /** Only matches starting at or after this offset count. */
  readonly from?: number
  /** Only matches made of whole lines count: start and end on line boundaries. */
  readonly lineAligned?: boolean
}

/** The range starts at a line start and ends at a line end. */
const isLineAligned = (content: string, range: Range) =>
  (range.start === 0 || content[range.start - 1] === "\n") && (range.end === content.length || content[range.end] === "\n")

/** One strategy's distinct (admissible) matches, by position. */
const run = (strategy: (typeof strategies)[number], content: string, find: string, options: LocateOptions): Array<Range> => {
  const from = options.from ?? 0
  const sorted = strategy
    .find(content, find)
    .filter((range) => range.start >= from && (!options.lineAligned || isLineAligned(content, range)))
    .sort((a, b) => a.start - b.start || a.end - b.end)
  // Sorted, a duplicate sits next to its twin.
  return sorted.filter((range, index) =>
    index === 0 || range.start !== sorted[index - 1]!.start || range.end !== sorted[index - 1]!.end
  )
}

/**
 * Every strategy's matches, in cascade order (strategies without any are left out). Lazy, and
 * a step (`undefined`) between strategies, so a caller can let the event loop run in between: a
 * later (costlier, fuzzier) strategy runs only when asked for.
 */
function* candidates(content: string, find: string, options: LocateOptions = {}): Generator<Located | undefined> {
  if (find.length === 0) return
  for (const strategy of strategies) {
    const ranges = run(strategy, content, find, options)
    if (ranges.length > 0) yield { strategy: strategy.name, ranges }
    else yield undefined
  }
}

/** Runs the cascade; the first strategy with at least one (admissible) match decides. */
export const locate = (content: string, find: string, options: LocateOptions = {}): Located | undefined => {
  for (const candidate of candidates(content, find, options)) if (candidate !== undefined) return candidate
  return undefined
}

export type ReplaceFailure =
  | { readonly _tag: "Identical" }
  | { readonly _tag: "NotFound" }
  | {
    readonly _tag: "MultipleMatches"
    readonly strategy: StrategyName
    readonly count: number
    /** 1-based line numbers where the matches start (each line once). */
    readonly lines: ReadonlyArray<number>
  }

/** One replaced passage: `content.slice(start, end)` becomes `text`. */
export interface Replacement extends Range {
  readonly text: string
}

export interface Replaced {
  readonly content: string
  readonly strategy: StrategyName
  /** How many passages were replaced. */
  readonly count: number
  /** The replaced passages, earliest first (for writing them into the file's own line endings). */
  readonly replacements: ReadonlyArray<Replacement>
  /** The replacement's indentation was shifted to where the passage sits (see `reindent`). */
  readonly reindented: boolean
}

/**
 * The strategy found one place, and the text there occurs nowhere else in the file (overlaps
 * counted): "aa" in "aaa" is ambiguous even where a strategy counts one place.
 */
const isUnique = (content: string, located: Located): boolean => {
  if (located.ranges.length !== 1) return false
  const text = content.slice(located.ranges[0]!.start, located.ranges[0]!.end)
  return content.indexOf(text) === content.lastIndexOf(text)
}

/** Non-overlapping ranges, earliest first. */
const disjoint = (ranges: ReadonlyArray<Range>): Array<Range> => {
  const kept: Array<Range> = []
  for (const range of ranges) if (kept.length === 0 || range.start >= kept[kept.length - 1]!.end) kept.push(range)
  return kept
}

/** 1-based line numbers of the ranges' starts, each once. */
const lineNumbers = (content: string, ranges: ReadonlyArray<Range>): Array<number> => {
  const numbers: Array<number> = []
  let line = 1
  let offset = 0
  for (const range of ranges) {
    for (let newline = content.indexOf("\n", offset); newline !== -1 && newline < range.start; newline = content.indexOf("\n", offset)) {
      line++
      offset = newline + 1
    }
    if (numbers[numbers.length - 1] !== line) numbers.push(line)
  }
  return numbers
}

/**
 * When only the trimmed search matched, drop the same surrounding whitespace from the replacement
 * so the blank lines the model wrapped both strings in are not inserted into the file.
 */
const trimmedReplacement = (oldString: string, newString: string): string => {
  const leading = oldString.slice(0, oldString.length - oldString.trimStart().length)
  const trailing = oldString.slice(oldString.trimEnd().length)
  let adjusted = newString
  if (leading.length > 0 && adjusted.startsWith(leading)) adjusted = adjusted.slice(leading.length)
  if (trailing.length > 0 && adjusted.endsWith(trailing)) adjusted = adjusted.slice(0, adjusted.length - trailing.length)
  return adjusted
}

const leadingSpace = (line: string) => line.slice(0, line.length - line.trimStart().length)

/**
 * Beyond OpenCode: when a line-by-line strategy matched lines indented differently from
 * `oldString`, and by the same amount on every line (the model dropped or added a level), the
 * replacement is shifted by that amount too, so it lands at the passage's indentation. Only when
 * `newString` starts at `oldString`'s indentation: a model that wrote `newString` at the file's
 * indentation already gets it as written.
 */
const reindent = (oldString: string, newString: string, matched: string): string | undefined => {
  const old = oldString.split("\n")
  const found = matched.split("\n")
  if (old.length !== found.length) return undefined
  let shift: { readonly add: string } | { readonly drop: string } | undefined
  for (let index = 0; index < old.length; index++) {
    if (old[index]!.trim() === "") continue
    const mine = leadingSpace(old[index]!)
    const theirs = leadingSpace(found[index]!)
    const here = theirs.endsWith(mine) ? { add: theirs.slice(0, theirs.length - mine.length) } : mine.endsWith(theirs)
      ? { drop: mine.slice(0, mine.length - theirs.length) }
      : undefined
    if (here === undefined) return undefined
    if (shift === undefined) shift = here
    else if (JSON.stringify(shift) !== JSON.stringify(here)) return undefined
  }
  if (shift === undefined || ("add" in shift ? shift.add : shift.drop) === "") return undefined
  const firstOld = old.find((line) => line.trim() !== "")!
  const firstNew = newString.split("\n").find((line) => line.trim() !== "")
  if (firstNew === undefined || leadingSpace(firstNew) !== leadingSpace(firstOld)) return undefined
  const { add, drop } = { add: "", drop: "", ...shift }
  return newString
    .split("\n")
    .map((line) => (line.trim() === "" ? line : add !== "" ? add + line : line.startsWith(drop) ? line.slice(drop.length) : line))
    .join("\n")
}

const LINE_STRATEGIES: ReadonlySet<StrategyName> = new Set(["line-trimmed", "indentation-flexible", "unicode-normalized"])

/**
 * Replaces `oldString` with `newString` in `content` (all three with `\n` line endings), as a
 * generator that yields between strategies (`replace` runs it through; the edit tool lets the
 * event loop run at each step).
 *
 * The exact text decides first: found once it is replaced, found several times it is an error
 * (naming the lines) unless `replaceAll`. Otherwise the fuzzy strategies are tried in order:
 * with `replaceAll` the first that finds anything replaces every place it found; without it the
 * first that finds exactly one place decides (a strategy that finds several passes to the next,
 * and a stricter one further down can still single one out, as in OpenCode). When strategies
 * found places but none exactly one, the match is ambiguous.
 */
export function* replaceSteps(
  content: string,
  oldString: string,
  newString: string,
  replaceAll = false
): Generator<undefined, Either.Either<Replaced, ReplaceFailure>> {
  if (oldString === newString) return Either.left({ _tag: "Identical" })
  let first: Located | undefined
  let located: Located | undefined
  for (const candidate of candidates(content, oldString)) {
    if (candidate === undefined) {
      yield undefined
      continue
    }
    first ??= candidate
    if (replaceAll || isUnique(content, candidate) || candidate.strategy === "exact") {
      located = candidate
      break
    }
    yield undefined
  }
  if (first === undefined) return Either.left({ _tag: "NotFound" })
  if (located === undefined || (!replaceAll && located.ranges.length > 1) || (!replaceAll && !isUnique(content, located))) {
    const ambiguous = located ?? first
    return Either.left({
      _tag: "MultipleMatches",
      strategy: ambiguous.strategy,
      count: ambiguous.ranges.length,
      lines: lineNumbers(content, ambiguous.ranges)
    })
  }
  const ranges = disjoint(located.ranges)
  let reindented = false
  const replacements = ranges.map((range): Replacement => {
    if (located.strategy === "trimmed-boundary") return { ...range, text: trimmedReplacement(oldString, newString) }
    const shifted = LINE_STRATEGIES.has(located.strategy)
      ? reindent(oldString.replace(/\n$/, ""), newString, content.slice(range.start, range.end).replace(/\n$/, ""))
      : undefined
    if (shifted !== undefined) reindented = true
    return { ...range, text: shifted ?? newString }
  })
  const pieces: Array<string> = []
  let cursor = 0
  for (const replacement of replacements) {
    pieces.push(content.slice(cursor, replacement.start), replacement.text)
    cursor = replacement.end
  }
  pieces.push(content.slice(cursor))
  return Either.right({ content: pieces.join(""), strategy: located.strategy, count: ranges.length, replacements, reindented })
}

/** `replaceSteps`, run through at once. */
export const replace = (
  content: string,
  oldString: string,
  newString: string,
  replaceAll = false
): Either.Either<Replaced, ReplaceFailure> => {
  const steps = replaceSteps(content, oldString, newString, replaceAll)
  for (let step = steps.next(); ; step = steps.next()) if (step.done) return step.value
}
