import { Effect } from "effect"
import * as net from "node:net"

/** A loopback port free a moment ago: for a server a test starts, or a port nothing listens on. */
export const freePort: Effect.Effect<number> = Effect.async<number>((resume) => {
  const probe = net.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as net.AddressInfo
    probe.close(() => resume(Effect.succeed(port)))
  })
})
