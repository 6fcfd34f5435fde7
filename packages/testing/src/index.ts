export * as TestInstance from "./TestInstance.js"
