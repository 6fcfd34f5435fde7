export * as TestData from "./TestData.js"
export * as TestInstance from "./TestInstance.js"
