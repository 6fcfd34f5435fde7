/** Kept apart so `agent --version` answers without loading the runtime. */
export const VERSION = "0.1.0"
