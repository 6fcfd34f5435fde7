import * as path from "node:path"

/** Files over this size are refused as attachments (read tool, `-f`, `@file`, server file parts). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024

/** The file types sent to the model as attachments rather than text. */
const ATTACHMENT_TYPES: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".pdf": "application/pdf"
}

/** The media type of a file that goes to the model as an attachment (image or PDF), else undefined. */
export const attachmentMime = (file: string): string | undefined => ATTACHMENT_TYPES[path.extname(file).toLowerCase()]
