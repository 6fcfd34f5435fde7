export { AgentGenerator } from "./AgentGenerator.js"
export { AgentRegistry } from "./AgentRegistry.js"
