/**
 * A list that renders only the rows in view (plus some above and below), for transcripts of
 * thousands of parts. Rows have their own heights: each rendered row is measured (ResizeObserver)
 * and unmeasured ones count as `estimate`. With `follow`, a list scrolled to its end stays at its
 * end as rows grow or arrive (a streaming answer).
 */
import type { ComponentChildren } from "preact"
import { memo } from "preact/compat"
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks"

export interface VirtualListProps<A> {
  readonly items: ReadonlyArray<A>
  readonly keyOf: (item: A) => string
  readonly render: (item: A, index: number) => ComponentChildren
  readonly estimate?: number
  readonly overscan?: number
  readonly follow?: boolean
  readonly class?: string
  readonly label?: string
  /** Changes when `render` would draw the same item differently (rows are redrawn only when their item or this changes). */
  readonly renderVersion?: string
}

/** The first index whose row ends below `y`. */
const indexAt = (offsets: Float64Array, y: number): number => {
  let low = 0
  let high = offsets.length - 1
  while (low < high) {
    const mid = (low + high) >> 1
    if (offsets[mid + 1]! <= y) low = mid + 1
    else high = mid
  }
  return low
}

interface RowProps {
  readonly rowKey: string
  readonly observer: ResizeObserver
  readonly item: unknown
  readonly version: string
  readonly draw: () => ComponentChildren
}

/** A row redraws only when its item (or the list's render version) changes, not on every scroll. */
const Row = memo((props: RowProps) => {
  const element = useRef<HTMLDivElement>(null)
  useLayoutEffect(() => {
    const node = element.current
    if (!node) return
    props.observer.observe(node)
    return () => props.observer.unobserve(node)
  }, [props.observer])
  return <div ref={element} data-key={props.rowKey} class="vrow">{props.draw()}</div>
}, (before, after) => before.item === after.item && before.version === after.version && before.observer === after.observer)

export const VirtualList = <A,>(props: VirtualListProps<A>) => {
  const { items, keyOf, estimate = 80, overscan = 600 } = props
  const scroller = useRef<HTMLDivElement>(null)
  const heights = useRef(new Map<string, number>())
  const [measured, setMeasured] = useState(0)
  const [view, setView] = useState({ top: 0, height: 800 })
  const atEnd = useRef(true)

  // offsets[i] is where row i starts; offsets[n] the total height.
  const offsets = useMemo(() => {
    const result = new Float64Array(items.length + 1)
    for (let i = 0; i < items.length; i++) result[i + 1] = result[i]! + (heights.current.get(keyOf(items[i]!)) ?? estimate)
    return result
  }, [items, measured, estimate])

  const total = offsets[items.length]!
  const start = items.length === 0 ? 0 : indexAt(offsets, Math.max(0, view.top - overscan))
  const end = items.length === 0 ? 0 : Math.min(items.length, indexAt(offsets, view.top + view.height + overscan) + 1)

  const observer = useMemo(
    () =>
      new ResizeObserver((entries) => {
        let changed = false
        for (const entry of entries) {
          const key = (entry.target as HTMLElement).dataset["key"]
          if (key === undefined) continue
          const height = (entry.target as HTMLElement).offsetHeight
          if (heights.current.get(key) !== height) {
            heights.current.set(key, height)
            changed = true
          }
        }
        if (changed) setMeasured((count) => count + 1)
      }),
    []
  )
  useEffect(() => () => observer.disconnect(), [observer])

  const onScroll = useCallback(() => {
    const element = scroller.current
    if (!element) return
    atEnd.current = element.scrollHeight - element.scrollTop - element.clientHeight < 48
    setView({ top: element.scrollTop, height: element.clientHeight })
  }, [])

  useEffect(() => {
    const element = scroller.current
    if (!element) return
    const resize = new ResizeObserver(onScroll)
    resize.observe(element)
    return () => resize.disconnect()
  }, [onScroll])

  // Keep to the end while following: after new rows or new heights, before the browser paints.
  useLayoutEffect(() => {
    const element = scroller.current
    if (props.follow && element && atEnd.current) element.scrollTop = element.scrollHeight
  }, [total, items.length, props.follow])

  const rows: Array<ComponentChildren> = []
  for (let i = start; i < end; i++) {
    const item = items[i]!
    const key = keyOf(item)
    const index = i
    rows.push(
      <Row key={key} rowKey={key} observer={observer} item={item} version={props.renderVersion ?? ""} draw={() => props.render(item, index)} />
    )
  }
  return (
    <div ref={scroller} class={`vlist ${props.class ?? ""}`} onScroll={onScroll} role="feed" aria-label={props.label} tabIndex={0}>
      <div style={{ height: `${offsets[start]}px` }} aria-hidden="true" />
      {rows}
      <div style={{ height: `${total - offsets[end]!}px` }} aria-hidden="true" />
    </div>
  )
}
