/**
 * What a file is, from its first bytes (magic numbers), not its name: a PNG saved as `.bin` is an
 * image, a text file named `.zip` is text. The read tool attaches the images a model can take
 * (PNG, JPEG, GIF, WebP) and PDFs, describes other images, and refuses other binary files.
 */

export type FileKind =
  | { readonly type: "attachment"; readonly mime: string; readonly label: "Image" | "PDF" }
  /** An image the models cannot take as an attachment. */
  | { readonly type: "image"; readonly format: string }
  /** A binary file; `format` when its magic number is known. */
  | { readonly type: "binary"; readonly format?: string }
  | { readonly type: "text" }

/** How many bytes `sniff` wants (more are fine). */
export const SNIFF_BYTES = 4096

const startsWith = (bytes: Uint8Array, magic: ReadonlyArray<number>, at = 0) =>
  bytes.length >= at + magic.length && magic.every((byte, index) => bytes[at + index] === byte)

const ascii = (text: string) => [...text].map((char) => char.charCodeAt(0))

/** Attachable types: magic number and MIME type. */
const ATTACHABLE: ReadonlyArray<readonly [(bytes: Uint8Array) => boolean, string, "Image" | "PDF"]> = [
  [(bytes) => startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), "image/png", "Image"],
  [(bytes) => startsWith(bytes, [0xff, 0xd8, 0xff]), "image/jpeg", "Image"],
  [(bytes) => startsWith(bytes, ascii("GIF87a")) || startsWith(bytes, ascii("GIF89a")), "image/gif", "Image"],
  [(bytes) => startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8), "image/webp", "Image"],
  [(bytes) => startsWith(bytes, ascii("%PDF-")), "application/pdf", "PDF"]
]

/** ISO media (`....ftyp<brand>`): HEIC and AVIF images. */
const isoBrand = (bytes: Uint8Array): string | undefined =>
  startsWith(bytes, ascii("ftyp"), 4) && bytes.length >= 12 ? String.fromCharCode(...bytes.subarray(8, 12)) : undefined

const IMAGES: ReadonlyArray<readonly [(bytes: Uint8Array) => boolean, string]> = [
  [(bytes) => startsWith(bytes, ascii("BM")) && bytes.length >= 26 && bytes[14]! >= 12 && bytes[15] === 0, "BMP"],
  [(bytes) => startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a]), "TIFF"],
  [(bytes) => startsWith(bytes, [0x00, 0x00, 0x01, 0x00]) && bytes.length >= 6 && bytes[4]! > 0, "ICO"],
  [(bytes) => startsWith(bytes, ascii("8BPS")), "Photoshop (PSD)"],
  [(bytes) => ["heic", "heix", "mif1", "msf1"].includes(isoBrand(bytes) ?? ""), "HEIC"],
  [(bytes) => ["avif", "avis"].includes(isoBrand(bytes) ?? ""), "AVIF"],
  [(bytes) => startsWith(bytes, [0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20]), "JPEG 2000"],
  [(bytes) => startsWith(bytes, [0x76, 0x2f, 0x31, 0x01]), "OpenEXR"]
]

const BINARIES: ReadonlyArray<readonly [ReadonlyArray<number>, string]> = [
  [[0x50, 0x4b, 0x03, 0x04], "ZIP archive, or a format built on ZIP such as docx, xlsx or jar"],
  [[0x1f, 0x8b], "gzip archive"],
  [[0x7f, 0x45, 0x4c, 0x46], "ELF executable"],
  [ascii("SQLite format 3"), "SQLite database"],
  [[0x00, 0x61, 0x73, 0x6d], "WebAssembly module"]
]

/** A NUL byte or more than 30% control characters. */
export const looksBinary = (sample: Uint8Array): boolean => {
  if (sample.length === 0) return false
  let control = 0
  for (const byte of sample) {
    if (byte === 0) return true
    if (byte < 9 || (byte > 13 && byte < 32)) control++
  }
  return control / sample.length > 0.3
}

/** The kind of a file whose first bytes (up to `SNIFF_BYTES`, or all of a smaller file) are `head`. */
export const sniff = (head: Uint8Array): FileKind => {
  for (const [test, mime, label] of ATTACHABLE) if (test(head)) return { type: "attachment", mime, label }
  for (const [test, format] of IMAGES) if (test(head)) return { type: "image", format }
  const sample = head.subarray(0, SNIFF_BYTES)
  if (!looksBinary(sample)) return { type: "text" }
  const known = BINARIES.find(([magic]) => startsWith(head, magic))
  return known ? { type: "binary", format: known[1] } : { type: "binary" }
}
