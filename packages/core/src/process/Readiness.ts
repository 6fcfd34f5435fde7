/**
 * A promise settled from outside, for a child process that reports when it is up (Node 20 lacks
 * `Promise.withResolvers`). A rejection nobody awaits is not reported as unhandled: a start that
 * failed is reported by whoever waits for it.
 */
export interface Readiness {
  readonly promise: Promise<void>
  readonly resolve: () => void
  readonly reject: (error: Error) => void
}

export const readiness = (): Readiness => {
  let resolve!: () => void
  let reject!: (error: Error) => void
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok
    reject = fail
  })
  promise.catch(() => {})
  return { promise, resolve, reject }
}
