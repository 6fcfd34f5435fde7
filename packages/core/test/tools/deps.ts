import { Layer } from "effect"
import { ConfigService } from "../../src/config/ConfigService.js"
import { Instance, type InstanceInfo } from "../../src/runtime/Instance.js"
import { InstructionLoader } from "../../src/context/InstructionLoader.js"

/** What the read tool needs: the instance and the instruction loader (for nested AGENTS.md). */
export const readDeps = (instance: InstanceInfo) =>
  InstructionLoader.layer.pipe(Layer.provideMerge(ConfigService.layer), Layer.provideMerge(Layer.succeed(Instance, instance)))
