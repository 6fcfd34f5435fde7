export { CommandRegistry } from "./CommandRegistry.js"
export { SessionLoop } from "./SessionLoop.js"
