/** The runtime's version, recorded on every session it creates. */
export const VERSION = "0.1.0"
