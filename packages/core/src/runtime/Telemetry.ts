import { FiberRef } from "effect"

/**
 * Metrics that are not read off a span: recorded by the service that sees them (the permission
 * service, compaction) through the recorder the OpenTelemetry export installs for the runtime it is
 * built in (`OtelExport.layer`). Services read it once, in their layer's constructor: undefined (no
 * export) costs one check per decision.
 */
export interface TelemetryRecorder {
  /** A permission decision: `allow`/`deny` by rule, or a person's `once`/`always`/`reject`/`corrected`. */
  readonly permissionDecision: (permission: string, decision: string) => void
  /** A summary of a session's history was made (`auto`: because the context was full). */
  readonly compaction: (auto: boolean) => void
}

/** The recorder of the runtime being built or run; undefined when nothing is exported. */
export const CurrentRecorder: FiberRef.FiberRef<TelemetryRecorder | undefined> = FiberRef.unsafeMake<TelemetryRecorder | undefined>(undefined)

/** The recorder, read once where a service is built. */
export const recorder = FiberRef.get(CurrentRecorder)
