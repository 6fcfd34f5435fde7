// `pnpm agent ...` in the checkout. pnpm runs scripts in the workspace root; the agent works in
// the directory the command was typed in (pnpm passes it as INIT_CWD), as the installed `agent` does.
process.chdir(process.env.INIT_CWD || process.cwd())
require("../packages/cli/dist/bundle/bin.js")
