/**
 * A session's changed files (its net diff, live from `session.diff`) and revert / unrevert:
 * revert undoes the file changes from a prompt on; files changed since by someone else are left
 * alone and shown as conflicts.
 */
import type { FileDiff, Session } from "@agent/domain"
import { useSignal } from "@preact/signals"
import { post } from "./Api.js"
import { FileDiffView } from "./DiffView.js"
import type { WireSession } from "./ViewState.js"

export interface RevertResult {
  readonly restored: ReadonlyArray<string>
  readonly conflicts: ReadonlyArray<string>
}

export const RevertBanner = (props: { readonly session: WireSession; readonly result: RevertResult | undefined; readonly onUnrevert: () => void }) => {
  const revert = props.session.revert
  if (!revert) return null
  const conflicts = props.result?.conflicts ?? revert.conflicts ?? []
  const restored = props.result?.restored ?? revert.files ?? []
  return (
    <div class="revert-banner" role="status" data-testid="revert-banner">
      <p>
        Reverted from a prompt on: {restored.length} file{restored.length === 1 ? "" : "s"} put back. The next prompt drops the reverted messages.
      </p>
      {conflicts.length > 0
        ? (
          <div class="conflicts" data-testid="conflicts">
            <p class="warn">Left alone, changed since the session touched them:</p>
            <ul>{conflicts.map((file) => <li key={file}><code>{file}</code></li>)}</ul>
          </div>
        )
        : null}
      <button type="button" onClick={props.onUnrevert}>Unrevert</button>
    </div>
  )
}

export const useRevert = (sessionID: string) => {
  const result = useSignal<RevertResult | undefined>(undefined)
  const error = useSignal<string | undefined>(undefined)
  const run = async (path: string, body: unknown) => {
    error.value = undefined
    try {
      const answer = await post<Session & RevertResult>(path, body)
      result.value = { restored: answer.restored, conflicts: answer.conflicts }
    } catch (failure) {
      error.value = failure instanceof Error ? failure.message : String(failure)
    }
  }
  return {
    result,
    error,
    revert: (messageID: string) => run(`/session/${sessionID}/revert`, { messageID }),
    unrevert: () => run(`/session/${sessionID}/unrevert`, {})
  }
}

export const Changes = (props: { readonly diffs: ReadonlyArray<FileDiff> }) => {
  const mode = useSignal<"unified" | "split">(matchMedia("(max-width: 700px)").matches ? "unified" : "split")
  const selected = useSignal<string | undefined>(undefined)
  const { diffs } = props
  if (diffs.length === 0) return <p class="empty" data-testid="no-changes">No file changes in this session.</p>
  const current = diffs.find((diff) => diff.file === selected.value) ?? diffs[0]!
  return (
    <div class="changes">
      <div class="toolbar">
        <div role="radiogroup" aria-label="Diff layout" class="segmented">
          {(["unified", "split"] as const).map((value) => (
            <button key={value} type="button" role="radio" aria-checked={mode.value === value} onClick={() => (mode.value = value)}>
              {value === "unified" ? "Unified" : "Split"}
            </button>
          ))}
        </div>
      </div>
      <div class="changes-body">
        <ul class="files" aria-label="Changed files">
          {diffs.map((diff) => (
            <li key={diff.file}>
              <button
                type="button"
                data-nav=""
                class={`file ${diff === current ? "selected" : ""}`}
                aria-pressed={diff === current}
                onClick={() => (selected.value = diff.file)}
              >
                <span class="file-name">{diff.file}</span>
                <span class="add">+{diff.additions}</span> <span class="del">−{diff.deletions}</span>
                {diff.status ? <span class="note">{diff.status}</span> : null}
              </button>
            </li>
          ))}
        </ul>
        <div class="file-diff" aria-label={`Diff of ${current.file}`}>
          <h2>{current.file}</h2>
          <FileDiffView diff={current} mode={mode.value} />
        </div>
      </div>
    </div>
  )
}

