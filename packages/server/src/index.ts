/** `agent serve` lands here (issue 9). The package builds and is wired into the workspace. */
export {}
