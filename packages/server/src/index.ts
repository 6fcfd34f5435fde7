export * from "./EventHub.js"
export * from "./Handlers.js"
export * as Server from "./Server.js"
export * as Client from "./Client.js"
