/**
 * The part of a helper program run with `node -e` (the hooks' launcher, the sandbox's supervisor)
 * that reads its requests: JSON lines on its stdin, each passed to the program's `handle`; a line
 * that is not JSON, or a request `handle` throws on, is reported on its stderr under `name`.
 */
export const jsonLinesInput = (name: string): string => String.raw`let pending = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  pending += chunk
  for (let newline = pending.indexOf("\n"); newline !== -1; newline = pending.indexOf("\n")) {
    const line = pending.slice(0, newline)
    pending = pending.slice(newline + 1)
    try { handle(JSON.parse(line)) } catch (error) { process.stderr.write(${JSON.stringify(`${name}: `)} + error + "\n") }
  }
})`
