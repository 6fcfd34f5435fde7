// process/: shell commands started for the runtime: directly (DirectCommand) or through the command
// launcher, a small process that forks them instead of the runtime (CommandLauncher, LauncherProgram).
// The names other subsystems use of it. Code imports the file that holds a name (see docs/architecture.md).

export * as CommandLauncher from "./CommandLauncher.js"
export { type CommandContext, type CommandOptions, type CommandResult, runDirect } from "./DirectCommand.js"
