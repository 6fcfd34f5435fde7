// A new root session is named by the title agent (on the small model, if any) after its first step.
import type { SessionID } from "@agent/domain"
import { Effect, Stream } from "effect"
import { warnBackgroundFailure } from "../runtime/BackgroundFailure.js"
import type { LiveMessage } from "../llm/MessageConversion.js"
import type { ResolvedModel } from "../llm/ProviderRegistry.js"
import { cleanTitle } from "./Decisions.js"
import type { LoopDeps } from "./LoopDeps.js"

export const generateTitle = (deps: LoopDeps, sessionID: SessionID, user: LiveMessage, sessionModel: ResolvedModel) =>
  Effect.gen(function*() {
    const { agents, providers, store } = deps
    const text = user.parts.flatMap((part) => (part.type === "text" && !part.synthetic ? [part.text] : [])).join("\n").trim()
    if (!text) return
    const titleAgent = yield* agents.get("title").pipe(Effect.orDie)
    const smallRef = yield* providers.smallModel()
    const model = smallRef ? yield* providers.resolve(smallRef).pipe(Effect.orElseSucceed(() => sessionModel)) : sessionModel
    const answer = yield* deps.llm.stream({
      model,
      system: [titleAgent.prompt ?? ""],
      messages: [{ role: "user", content: text.slice(0, 4000) }],
      tools: [],
      options: titleAgent.options,
      ...(titleAgent.temperature !== undefined ? { temperature: titleAgent.temperature } : {})
    }).pipe(Stream.runFold("", (so_far, event) => event.type === "text-delta" ? so_far + event.text : so_far))
    const title = cleanTitle(answer)
    if (!title) return
    const current = yield* store.get(sessionID)
    if (current.title.startsWith("New session - ")) yield* store.update(sessionID, { title })
  }).pipe(Effect.catchAllCause(warnBackgroundFailure("title generation failed")))
