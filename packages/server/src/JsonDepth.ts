/** Objects and arrays a request body may nest (a prompt needs about 6). */
export const MAX_JSON_DEPTH = 64

/**
 * Whether `text` nests objects and arrays deeper than `limit`, in one pass and without parsing:
 * brackets inside strings (escaped quotes included) do not count. Run on a body before
 * `JSON.parse`, which would build a 4-million-deep array within the size limit (1.5 GB) and whose
 * deep results overflow the stack of the decoders after it.
 */
export const nestedDeeperThan = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if (inString) {
      if (code === 0x5c) index++ // a backslash: the next character is escaped
      else if (code === 0x22) inString = false
    } else if (code === 0x22) {
      inString = true
    } else if (code === 0x7b || code === 0x5b) {
      if (++depth > limit) return true
    } else if (code === 0x7d || code === 0x5d) {
      depth--
    }
  }
  return false
}
