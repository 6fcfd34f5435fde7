export { agent, run } from "./Cli.js"
