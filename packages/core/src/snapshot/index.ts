export { SessionChanges } from "./SessionChanges.js"
export type { FileChange } from "./SessionChanges.js"
export { Snapshot } from "./Snapshot.js"
export { stepTouch } from "./StepTouch.js"
