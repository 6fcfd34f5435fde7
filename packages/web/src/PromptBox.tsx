/** A prompt with the agent and model to run it with; Ctrl+Enter (or ⌘+Enter) sends. */
import { useSignal } from "@preact/signals"
import { useStore } from "./Context.js"

export interface Choice {
  agent?: string
  model?: { providerID: string; modelID: string }
}

export const parseModel = (value: string): { providerID: string; modelID: string } | undefined => {
  const slash = value.indexOf("/")
  return slash > 0 && slash < value.length - 1 ? { providerID: value.slice(0, slash), modelID: value.slice(slash + 1) } : undefined
}

export const PromptBox = (props: {
  readonly label: string
  readonly onSend: (text: string, choice: Choice) => Promise<void>
  readonly busy?: boolean
  readonly onAbort?: () => Promise<void>
  readonly agent?: string
}) => {
  const store = useStore()
  const text = useSignal("")
  const agent = useSignal(props.agent ?? "")
  const model = useSignal("")
  const sending = useSignal(false)
  const error = useSignal<string | undefined>(undefined)
  const agents = store.info.value.agents.filter((entry) => entry.mode !== "subagent" && entry.hidden !== true)

  const send = async () => {
    const value = text.value.trim()
    if (value === "" || sending.value) return
    const chosen = parseModel(model.value.trim())
    if (model.value.trim() !== "" && !chosen) {
      error.value = `the model must be provider/model, not ${JSON.stringify(model.value)}`
      return
    }
    sending.value = true
    error.value = undefined
    try {
      await props.onSend(value, { ...(agent.value ? { agent: agent.value } : {}), ...(chosen ? { model: chosen } : {}) })
      text.value = ""
    } catch (failure) {
      error.value = failure instanceof Error ? failure.message : String(failure)
    } finally {
      sending.value = false
    }
  }

  return (
    <form
      class="prompt-box"
      aria-label={props.label}
      onSubmit={(event) => {
        event.preventDefault()
        void send()
      }}
    >
      <textarea
        name="prompt"
        rows={3}
        placeholder={`${props.label} (Ctrl+Enter sends)`}
        aria-label={props.label}
        value={text.value}
        onInput={(event) => (text.value = (event.target as HTMLTextAreaElement).value)}
        onKeyDown={(event) => {
          if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
            event.preventDefault()
            void send()
          }
        }}
      />
      <div class="prompt-controls">
        <label>
          Agent
          <select name="agent" value={agent.value} onChange={(event) => (agent.value = (event.target as HTMLSelectElement).value)}>
            <option value="">default</option>
            {agents.map((entry) => <option key={entry.name} value={entry.name}>{entry.name}</option>)}
          </select>
        </label>
        <label>
          Model
          <input
            name="model"
            list="models"
            placeholder="default"
            value={model.value}
            onInput={(event) => (model.value = (event.target as HTMLInputElement).value)}
          />
          <datalist id="models">{store.info.value.models.map((entry) => <option key={entry} value={entry} />)}</datalist>
        </label>
        <button type="submit" disabled={sending.value}>Send</button>
        {props.busy && props.onAbort
          ? <button type="button" class="danger" onClick={() => void props.onAbort!()}>Abort</button>
          : null}
      </div>
      {error.value ? <p class="error" role="alert">{error.value}</p> : null}
    </form>
  )
}
