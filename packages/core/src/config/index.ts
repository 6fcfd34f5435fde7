export { ConfigService, isEnvFlag, loadConfig } from "./ConfigService.js"
export type { ConfigInfo } from "./ConfigService.js"
