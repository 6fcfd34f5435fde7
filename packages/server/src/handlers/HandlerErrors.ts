import { BadRequestError, BusyError, NotFoundError, type RevertError, type Session } from "@agent/domain"

/** How the core's errors answer over HTTP. */
export const notFound = (error: { readonly message: string }) => NotFoundError.of(error.message)
export const revertError = (error: RevertError | { readonly _tag: "SessionNotFound"; readonly message: string }) =>
  error._tag === "SessionNotFound" || error.reason === "point_not_found"
    ? NotFoundError.of(error.message)
    : error.reason === "busy"
    ? BusyError.of(error.message)
    : BadRequestError.of(error.message)
export const revertResponse = (result: { readonly session: Session; readonly restored: ReadonlyArray<string>; readonly conflicts: ReadonlyArray<string> }) => ({
  ...result.session,
  restored: result.restored,
  conflicts: result.conflicts
})
export const badRequest = (error: { readonly message: string }) => BadRequestError.of(error.message)

