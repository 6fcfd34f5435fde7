import * as os from "node:os"
import * as path from "node:path"

export const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** A path relative to the current directory when inside it, with the home directory as `~`. */
export const shortPath = (file: string) => {
  const relative = path.relative(process.cwd(), file)
  if (!relative.startsWith("..") && !path.isAbsolute(relative)) return relative
  const home = os.homedir()
  return file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file
}

/** Left-aligned columns, two spaces apart. */
export const table = (rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("  ").trimEnd()).join("\n")
}
