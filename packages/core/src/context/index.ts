// context/: What the model is told besides the conversation: instruction files, skills, the system prompt,
// and compaction of long histories.
// What other subsystems use of it; they import it from here, never from its files.

export { Compaction } from "./Compaction.js"
export { InstructionLoader } from "./InstructionLoader.js"
export { SkillRegistry, fileUrl, parseSkill } from "./SkillRegistry.js"
export type { Skill } from "./SkillRegistry.js"
export * as SystemPrompt from "./SystemPrompt.js"
