export * from "./AcpAgent.js"
export * from "./AcpOptions.js"
export * from "./AcpRuntimes.js"
export * as AcpTranslate from "./AcpTranslate.js"
