import { describe, expect, it } from "@effect/vitest"
import * as BashArity from "../src/tool/BashArity.js"

const prefix = (command: string) => BashArity.prefix(command.split(" ")).join(" ")

describe("BashArity.prefix", () => {
  it("uses the arity of the command", () => {
    expect(prefix("ls -la /tmp")).toBe("ls")
    expect(prefix("git status -s")).toBe("git status")
    expect(prefix("aws s3 ls bucket")).toBe("aws s3 ls")
  })

  it("the longest matching entry wins", () => {
    expect(prefix("npm run build --watch")).toBe("npm run build")
    expect(prefix("npm install react")).toBe("npm install")
    expect(prefix("docker compose up -d")).toBe("docker compose up")
    expect(prefix("git config --global user.name")).toBe("git config --global")
    expect(prefix("git stash pop")).toBe("git stash pop")
  })

  it("unknown commands keep their first token", () => {
    expect(prefix("frobnicate --all now")).toBe("frobnicate")
  })

  it("short commands keep what they have", () => {
    expect(prefix("git")).toBe("git")
    expect(prefix("npm run")).toBe("npm run")
  })

  it("no tokens, no prefix", () => {
    expect(BashArity.prefix([])).toEqual([])
  })

  it("carries the whole table", () => {
    expect(BashArity.table.size).toBe(25 + 64 + 47)
    expect(BashArity.table.get("terraform workspace")).toBe(3)
    expect(BashArity.table.get("redis-cli")).toBe(2)
    expect(BashArity.table.get("which")).toBe(1)
  })
})
