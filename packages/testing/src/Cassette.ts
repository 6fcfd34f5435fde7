/** Cassettes live in core (`agent run --record/--replay` uses them); re-exported for tests. */
import { Cassette } from "@agent/core"

export type CassettePlayer = Cassette.CassettePlayer
export type CassetteRecorder = Cassette.CassetteRecorder
// Typed through the namespace: the declaration file then names `@agent/core`, not a file inside it.
export const decode: typeof Cassette.decode = Cassette.decode
export const encode: typeof Cassette.encode = Cassette.encode
export const openPlayer: typeof Cassette.openPlayer = Cassette.openPlayer
export const openRecording: typeof Cassette.openRecording = Cassette.openRecording
export const record: typeof Cassette.record = Cassette.record
export const replay: typeof Cassette.replay = Cassette.replay
export const replayOrRecord: typeof Cassette.replayOrRecord = Cassette.replayOrRecord
