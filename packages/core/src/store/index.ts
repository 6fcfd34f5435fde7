export * as Database from "./Database.js"
export { filename, openedFile, withBusyRetry } from "./Database.js"
export { SessionStore } from "./SessionStore.js"
