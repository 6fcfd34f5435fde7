import { Option, Schema, SchemaAST as AST } from "effect"

/**
 * A decoder for schemas that do not transform (plain structs, unions, arrays, literals and
 * refinements such as branded ids): it checks the input where it lies and returns it as the
 * decoded value, instead of building a copy node by node as `Schema.decodeUnknownSync` does.
 * Loading a long session decodes thousands of stored rows, and the copies were most of its cost.
 *
 * The check answers one of three things for each node. SAME: decoding succeeds and its output
 * equals the input. FAIL: decoding fails, for certain. UNSURE: anything else (an excess key
 * the decoder would drop, a transformation, a kind of node this does not know). Only SAME
 * takes the fast path; everything else goes through the real decoder, which gives the same
 * value or the same error it always did.
 */
const SAME = 0
const FAIL = 1
const UNSURE = 2
type Verdict = typeof SAME | typeof FAIL | typeof UNSURE
type Check = (input: unknown) => Verdict

const NO_OPTIONS: AST.ParseOptions = {}

const isObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const always = (verdict: Verdict): Check => () => verdict

/** The literal values a required property must have in every member, if some key discriminates them. */
const discriminator = (members: ReadonlyArray<AST.AST>): { key: string; byValue: Map<unknown, Array<number>> } | undefined => {
  const first = members[0]
  if (!first || first._tag !== "TypeLiteral") return undefined
  for (const candidate of first.propertySignatures) {
    if (typeof candidate.name !== "string") continue
    const key = candidate.name
    const byValue = new Map<unknown, Array<number>>()
    const ok = members.every((member, index) => {
      if (member._tag !== "TypeLiteral") return false
      const property = member.propertySignatures.find((signature) => signature.name === key)
      if (!property || property.isOptional) return false
      const literals = property.type._tag === "Literal"
        ? [property.type]
        : property.type._tag === "Union" && property.type.types.every((type) => type._tag === "Literal")
        ? (property.type.types as ReadonlyArray<AST.Literal>)
        : undefined
      if (!literals) return false
      for (const literal of literals) {
        const list = byValue.get(literal.literal) ?? []
        list.push(index)
        byValue.set(literal.literal, list)
      }
      return true
    })
    if (ok) return { key, byValue }
  }
  return undefined
}

const compile = (ast: AST.AST, memo: Map<AST.AST, Check>): Check => {
  const known = memo.get(ast)
  if (known) return known
  // recursive schemas meet themselves again while compiling: point at the finished check
  let compiled: Check | undefined
  memo.set(ast, (input) => compiled!(input))
  compiled = build(ast, memo)
  memo.set(ast, compiled)
  return compiled
}

const build = (ast: AST.AST, memo: Map<AST.AST, Check>): Check => {
  switch (ast._tag) {
    case "StringKeyword":
      return (input) => (typeof input === "string" ? SAME : FAIL)
    case "NumberKeyword":
      return (input) => (typeof input === "number" ? SAME : FAIL)
    case "BooleanKeyword":
      return (input) => (typeof input === "boolean" ? SAME : FAIL)
    case "UndefinedKeyword":
      return (input) => (input === undefined ? SAME : FAIL)
    case "UnknownKeyword":
    case "AnyKeyword":
      return always(SAME)
    case "NeverKeyword":
      return always(FAIL)
    case "Literal": {
      const literal = ast.literal
      return (input) => (input === literal ? SAME : FAIL)
    }
    case "Refinement": {
      const from = compile(ast.from, memo)
      return (input) => {
        const verdict = from(input)
        if (verdict !== SAME) return verdict
        return Option.isNone(ast.filter(input, NO_OPTIONS, ast)) ? SAME : FAIL
      }
    }
    case "Suspend": {
      let inner: Check | undefined
      return (input) => (inner ??= compile(ast.f(), memo))(input)
    }
    case "TupleType": {
      // only plain arrays (`Schema.Array`); other tuples go to the decoder
      if (ast.elements.length !== 0 || ast.rest.length !== 1) return always(UNSURE)
      const item = compile(ast.rest[0]!.type, memo)
      return (input) => {
        if (!Array.isArray(input)) return FAIL
        let verdict: Verdict = SAME
        for (let index = 0; index < input.length; index++) {
          const next = item(input[index])
          if (next === FAIL) return FAIL
          if (next === UNSURE) verdict = UNSURE
        }
        return verdict
      }
    }
    case "TypeLiteral": {
      // `Schema.Struct({})` takes any value but null and undefined, and gives it back as it is
      if (ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) {
        return (input) => (input === null || input === undefined ? FAIL : SAME)
      }
      const properties = ast.propertySignatures.map((signature) => ({
        name: signature.name,
        optional: signature.isOptional,
        check: compile(signature.type, memo)
      }))
      if (properties.some((property) => typeof property.name !== "string")) return always(UNSURE)
      const names = new Set(properties.map((property) => property.name as string))
      const index = ast.indexSignatures
      if (index.length > 1 || (index.length === 1 && index[0]!.parameter._tag !== "StringKeyword")) return always(UNSURE)
      const indexValue = index.length === 1 ? compile(index[0]!.type, memo) : undefined
      return (input) => {
        if (!isObject(input)) return typeof input === "object" && input !== null ? UNSURE : FAIL
        let verdict: Verdict = SAME
        for (const property of properties) {
          const name = property.name as string
          if (Object.prototype.hasOwnProperty.call(input, name)) {
            const next = property.check(input[name])
            if (next === FAIL) return FAIL
            if (next === UNSURE) verdict = UNSURE
          } else if (!property.optional) {
            // the decoder checks a missing key as `undefined` and then adds it to its output
            if (property.check(undefined) === FAIL) return FAIL
            verdict = UNSURE
          }
        }
        for (const key in input) {
          if (!Object.prototype.hasOwnProperty.call(input, key)) continue
          // JSON.parse makes "__proto__" an own key; the decoder's output cannot hold it as one
          if (key === "__proto__") verdict = UNSURE
          if (indexValue) {
            // a failing index signature is left to the decoder to report
            if (indexValue(input[key]) !== SAME) verdict = UNSURE
          } else if (!names.has(key)) {
            verdict = UNSURE // an excess key: the decoder's output would not have it
          }
        }
        return verdict
      }
    }
    case "Union": {
      const members = ast.types.map((type) => compile(type, memo))
      const tagged = discriminator(ast.types)
      const combine = (input: unknown, candidates: ReadonlyArray<number>): Verdict => {
        // which member the decoder picks does not matter when every one that fits gives the input back
        let verdict: Verdict = FAIL
        for (const index of candidates) {
          const next = members[index]!(input)
          if (next === UNSURE) return UNSURE
          if (next === SAME) verdict = SAME
        }
        return verdict
      }
      const all = members.map((_, index) => index)
      if (!tagged) return (input) => combine(input, all)
      return (input) => {
        if (!isObject(input)) return combine(input, all)
        // a member whose required literal key has another value fails for certain
        return combine(input, tagged.byValue.get(input[tagged.key]) ?? [])
      }
    }
    default:
      // transformations, declarations (classes, dates), enums, template literals, ...
      return always(UNSURE)
  }
}

/**
 * `Schema.decodeUnknownSync(schema)`, returning the input itself whenever decoding would give
 * back an equal value. Throws the decoder's own error for input that does not decode.
 */
export const makeInPlaceDecoder = <A, I>(schema: Schema.Schema<A, I, never>): (input: unknown) => A => {
  const check = compile(schema.ast, new Map())
  const decode = Schema.decodeUnknownSync(schema)
  return (input) => (check(input) === SAME ? (input as A) : decode(input))
}

/** @internal for tests: whether the fast path takes a value. */
export const takesFastPath = <A, I>(schema: Schema.Schema<A, I, never>) => {
  const check = compile(schema.ast, new Map())
  return (input: unknown) => check(input) === SAME
}
