/** Diffs as the page shows them: a file's before/after as unified or side-by-side hunks, and a unified diff text as is. */
import type { FileDiff } from "@agent/domain"
import { useMemo } from "preact/hooks"
import { type DiffLine, diffLines, hunkHeader, hunks, splitRows } from "./LineDiff.js"

const sign = (line: DiffLine) => (line.kind === "add" ? "+" : line.kind === "del" ? "-" : " ")

const Cell = (props: { readonly line: DiffLine | undefined; readonly side: "old" | "new" }) => {
  const { line } = props
  if (!line) return <><td class="num" /><td class="code empty" /></>
  const number = props.side === "old" ? ("oldNo" in line ? line.oldNo : "") : ("newNo" in line ? line.newNo : "")
  return <><td class="num">{number}</td><td class={`code ${line.kind}`}>{line.text}</td></>
}

export const FileDiffView = (props: { readonly diff: FileDiff; readonly mode: "unified" | "split" }) => {
  const { diff } = props
  const parts = useMemo(() => hunks(diffLines(diff.before, diff.after)), [diff.before, diff.after])
  if (diff.binary) return <p class="note">Binary file: no text diff.</p>
  if (parts.length === 0) return <p class="note">No text changes.</p>
  return (
    <table class={`diff ${props.mode}`} data-testid="diff">
      {parts.map((hunk, index) => (
        <tbody key={index}>
          <tr class="hunk"><td colSpan={props.mode === "split" ? 4 : 3}>{hunkHeader(hunk)}</td></tr>
          {props.mode === "unified"
            ? hunk.lines.map((line, at) => (
              <tr key={at}>
                <td class="num">{"oldNo" in line ? line.oldNo : ""}</td>
                <td class="num">{"newNo" in line ? line.newNo : ""}</td>
                <td class={`code ${line.kind}`}>{sign(line)} {line.text}</td>
              </tr>
            ))
            : splitRows(hunk.lines).map((row, at) => (
              <tr key={at}>
                <Cell line={row.left} side="old" />
                <Cell line={row.right} side="new" />
              </tr>
            ))}
        </tbody>
      ))}
    </table>
  )
}

/** A unified diff as text (an edit's ask carries one): each line coloured by its first character. */
export const UnifiedText = (props: { readonly text: string }) => (
  <pre class="unified" data-testid="ask-diff">
    {props.text.split("\n").map((line, index) => {
      const kind = line.startsWith("+++") || line.startsWith("---")
        ? "file"
        : line.startsWith("@@")
        ? "hunk"
        : line.startsWith("+")
        ? "add"
        : line.startsWith("-")
        ? "del"
        : "same"
      return <span key={index} class={`line ${kind}`}>{line}{"\n"}</span>
    })}
  </pre>
)
