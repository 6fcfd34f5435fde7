import { IdPrefix, type IdKind } from "@agent/domain"
import { randomBytes } from "node:crypto"

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const RANDOM_CHARS = 12
const TIME_HEX = 14
const TIME_MASK = (1n << 56n) - 1n

// Per process, not per runtime: ids stay ascending and distinct across every runtime of the process.
let lastTime = 0
let counter = 0

// Random bytes are drawn in blocks: one system call per few hundred ids, not one per id.
const POOL_SIZE = 4096
let pool = randomBytes(POOL_SIZE)
let poolOffset = 0

const randomBase62 = (length: number): string => {
  if (poolOffset + length > POOL_SIZE) {
    pool = randomBytes(POOL_SIZE)
    poolOffset = 0
  }
  let out = ""
  for (let i = 0; i < length; i++) out += BASE62[pool[poolOffset + i]! % 62]
  poolOffset += length
  return out
}

/**
 * Time-ordered component: 56 bits of (ms * 4096 + counter); 53 are used until the year 285,000. The clock may go backwards
 * or the counter may fill within one millisecond; in both cases we keep counting from the
 * last value so ids from one process are strictly increasing.
 */
const nextTicks = (now: number): bigint => {
  if (now > lastTime) {
    lastTime = now
    counter = 0
  }
  counter++
  if (counter >= 0x1000) {
    lastTime++
    counter = 1
  }
  return BigInt(lastTime) * 0x1000n + BigInt(counter)
}

const make = (kind: IdKind, descending: boolean, now: number): string => {
  const ticks = nextTicks(now)
  const value = (descending ? ~ticks : ticks) & TIME_MASK
  return `${IdPrefix[kind]}_${value.toString(16).padStart(TIME_HEX, "0")}${randomBase62(RANDOM_CHARS)}`
}

/** Ids that sort by creation time, newest last. */
export const ascending = <K extends IdKind>(kind: K, now: number = Date.now()) => make(kind, false, now)

/** Ids that sort by creation time, newest first (sessions). */
export const descending = <K extends IdKind>(kind: K, now: number = Date.now()) => make(kind, true, now)

/** The creation time (ms) encoded in an ascending or descending id. */
export const timestamp = (id: string): number => {
  const start = id.indexOf("_") + 1
  let value = BigInt(`0x${id.slice(start, start + TIME_HEX)}`)
  // Ascending values stay below 2^53; inverted (descending) ones have the top bits set.
  if (value >> 53n !== 0n) value = ~value & TIME_MASK
  return Number(value / 0x1000n)
}
