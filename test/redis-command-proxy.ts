/**
 * A TCP proxy in front of a Redis that counts the commands its clients send (the RESP arrays they write), by name —
 * what a client costs in requests to Redis, without the commands a Lua script runs inside Redis (which INFO
 * commandstats counts too). A pipeline's commands are counted one by one, so the count bounds the round trips.
 */
import net from 'node:net'

/** A running proxy. */
export interface RedisCommandProxy {
  /** The proxy's URL (`redis://127.0.0.1:PORT`). */
  readonly url: string
  /** Commands sent since the start or the last reset, by lower-case name. */
  counts(): Record<string, number>
  /** Their total. */
  total(): number
  reset(): void
  close(): Promise<void>
}

/** Counts the commands of one client connection's byte stream (RESP arrays of bulk strings). */
function commandReader(onCommand: (name: string) => void): (chunk: Buffer) => void {
  let buf: Buffer = Buffer.alloc(0)
  return (chunk) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
    let pos = 0
    for (;;) {
      const start = pos
      const line = (at: number): [string, number] | null => {
        const end = buf.indexOf('\r\n', at)
        return end < 0 ? null : [buf.toString('latin1', at, end), end + 2]
      }
      const head = line(pos)
      if (!head) break
      if (!head[0].startsWith('*')) {
        // an inline command (redis-cli style): one line
        onCommand(head[0].trim().split(/\s+/)[0]!.toLowerCase())
        pos = head[1]
        continue
      }
      const n = Number(head[0].slice(1))
      let at = head[1]
      let name = ''
      let complete = true
      for (let i = 0; i < n; i++) {
        const len = line(at)
        if (!len) {
          complete = false
          break
        }
        const size = Number(len[0].slice(1))
        if (buf.length < len[1] + size + 2) {
          complete = false
          break
        }
        if (i === 0) name = buf.toString('latin1', len[1], len[1] + size).toLowerCase()
        at = len[1] + size + 2
      }
      if (!complete) {
        pos = start
        break
      }
      onCommand(name)
      pos = at
    }
    buf = buf.subarray(pos)
  }
}

/** Starts a counting proxy to the Redis at `port` on 127.0.0.1 (listening on a free loopback port). */
export async function startRedisCommandProxy(port: number, host = '127.0.0.1'): Promise<RedisCommandProxy> {
  let counts: Record<string, number> = {}
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host)
    sockets.add(client).add(upstream)
    const read = commandReader((name) => void (counts[name] = (counts[name] ?? 0) + 1))
    client.on('data', (d: Buffer) => {
      read(d)
      upstream.write(d)
    })
    upstream.pipe(client)
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('close', end).on('error', end)
    upstream.on('close', end).on('error', end)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port: own } = server.address() as net.AddressInfo
  return {
    url: `redis://127.0.0.1:${own}`,
    counts: () => ({ ...counts }),
    total: () => Object.values(counts).reduce((s, v) => s + v, 0),
    reset() {
      counts = {}
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
