/**
 * Model text as HTML: `marked` renders, DOMPurify removes anything that could run (scripts, event
 * handlers, `javascript:` links) before it reaches the page. Links open in a new tab without a referrer.
 */
import DOMPurify from "dompurify"
import { Marked } from "marked"

const marked = new Marked({ gfm: true, breaks: false, async: false })

const purifier = DOMPurify(window)
purifier.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank")
    node.setAttribute("rel", "noopener noreferrer")
  }
})

export const renderMarkdown = (text: string): string =>
  purifier.sanitize(marked.parse(text) as string, { FORBID_TAGS: ["style", "form", "input", "button", "img"], FORBID_ATTR: ["style"] })
