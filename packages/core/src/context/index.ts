// context/: What the model is told besides the conversation: instruction files, skills, the system prompt,
// and compaction of long histories.
// The names other subsystems use of it, and its errors. Code imports the file that holds a name (see
// docs/architecture.md: barrels would put every member into each CLI chunk that imports one).

export { Compaction } from "./Compaction.js"
export { InstructionLoader } from "./InstructionLoader.js"
export { SkillRegistry, fileUrl, parseSkill } from "./SkillRegistry.js"
export type { Skill } from "./SkillRegistry.js"
export * as SystemPrompt from "./SystemPrompt.js"
