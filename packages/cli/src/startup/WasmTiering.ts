import { setFlagsFromString } from "node:v8"

/**
 * Why: V8's optimizing recompile of the two wasm modules' hot functions cost ~1 s of CPU and up
 * to 40 MB at once, to speed up parses that take under a millisecond.
 *
 * The process runs two wasm modules, the bash grammar (tree-sitter) and fetch's HTTP parser, and
 * each is hot enough after one command or one response for V8 to recompile its largest function
 * with the optimizing compiler: the bash lexer (one 160 KB function) and the HTTP parser's state
 * machine took ~1 s of CPU on background threads and up to 40 MB of compiler memory at once, a
 * quarter of the peak of a short run. So WebAssembly stays on the baseline compiler (Liftoff).
 * (Unlike `--liftoff-only`, a function Liftoff cannot compile still goes to the optimizing
 * compiler instead of failing.) Set before any wasm is compiled.
 */
export const keepWasmOnBaseline = () => {
  setFlagsFromString("--no-wasm-dynamic-tiering")
  setFlagsFromString("--no-wasm-tier-up")
}
