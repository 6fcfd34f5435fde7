import type { MessageWithParts, Part, SessionRevert } from "@agent/domain"
import { describe, expect, it } from "@effect/vitest"
import { endSnapshot, isHidden, visible } from "../../src/snapshot/RevertPoint.js"

const point = (messageID: string, partID?: string) =>
  ({ messageID, ...(partID !== undefined ? { partID } : {}) }) as unknown as SessionRevert

const part = (id: string, fields: Record<string, unknown> = { type: "text", text: id }) =>
  ({ id, sessionID: "ses_1", messageID: "msg_b", ...fields }) as unknown as Part

const message = (id: string, parts: ReadonlyArray<Part>) => ({ info: { id }, parts }) as unknown as MessageWithParts

describe("revert point", () => {
  it.each([
    { revert: undefined, messageID: "msg_b", partID: undefined, hidden: false, why: "no revert hides nothing" },
    { revert: point("msg_b"), messageID: "msg_a", partID: undefined, hidden: false, why: "a message before the point stays" },
    { revert: point("msg_b"), messageID: "msg_b", partID: undefined, hidden: true, why: "the point's message goes" },
    { revert: point("msg_b"), messageID: "msg_c", partID: undefined, hidden: true, why: "a later message goes" },
    { revert: point("msg_b", "prt_2"), messageID: "msg_b", partID: "prt_1", hidden: false, why: "a part before the point stays" },
    { revert: point("msg_b", "prt_2"), messageID: "msg_b", partID: "prt_2", hidden: true, why: "the point's part goes" },
    { revert: point("msg_b", "prt_2"), messageID: "msg_b", partID: "prt_3", hidden: true, why: "a later part goes" },
    { revert: point("msg_b", "prt_2"), messageID: "msg_b", partID: undefined, hidden: false, why: "the point's message stays when only parts go" },
    { revert: point("msg_b", "prt_2"), messageID: "msg_c", partID: "prt_0", hidden: true, why: "a later message goes whatever its parts" }
  ])("isHidden: $why", ({ hidden, messageID, partID, revert }) => {
    expect(isHidden(revert, messageID, partID)).toBe(hidden)
  })

  it("visible keeps the messages before the point and the parts of its message before the point's part", () => {
    const messages = [
      message("msg_a", [part("prt_0")]),
      message("msg_b", [part("prt_1"), part("prt_2"), part("prt_3")]),
      message("msg_c", [part("prt_4")])
    ]
    expect(visible(undefined, messages)).toEqual(messages)
    expect(visible(point("msg_b"), messages).map((shown) => shown.info.id)).toEqual(["msg_a"])
    const shown = visible(point("msg_b", "prt_2"), messages)
    expect(shown.map((each) => each.info.id)).toEqual(["msg_a", "msg_b"])
    expect(shown[1]!.parts.map((each) => each.id)).toEqual(["prt_1"])
  })

  it.each([
    { parts: [], end: undefined, why: "no step, no snapshot" },
    { parts: [part("prt_1", { type: "step-finish", snapshot: "s1" })], end: "s1", why: "a step's end" },
    {
      parts: [part("prt_1", { type: "step-finish", snapshot: "s1" }), part("prt_2", { type: "snapshot", snapshot: "s2" })],
      end: "s2",
      why: "the last record wins"
    },
    {
      parts: [part("prt_1", { type: "snapshot", snapshot: "s1" }), part("prt_2", { type: "step-finish" })],
      end: "s1",
      why: "a step without a snapshot keeps the one before"
    }
  ])("endSnapshot: $why", ({ end, parts }) => {
    expect(endSnapshot(parts)).toBe(end)
  })
})
