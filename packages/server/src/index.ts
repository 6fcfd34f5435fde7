export * from "./EventHub.js"
export * from "./Handlers.js"
export * as Server from "./Server.js"
