/** Cassettes live in core (`agent run --record/--replay` uses them); re-exported for tests. */
import { Cassette } from "@agent/core"

export type CassettePlayer = Cassette.CassettePlayer
export type CassetteRecorder = Cassette.CassetteRecorder
export const { decode, encode, openPlayer, openRecording, record, replay, replayOrRecord } = Cassette
