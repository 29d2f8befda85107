/**
 * A minimal SOCKS5 server on loopback (RFC 1928 CONNECT, RFC 1929 username/password), for tests only. It opens its
 * outgoing connections from `outgoingAddress` (another loopback address, 127.0.0.2 by default), so the server at
 * the far end sees the proxy's address, not the client's; and it counts tunnels and authentication failures.
 *
 * @example
 * const socks = await startSocksServer({ users: { me: 'secret' } })
 * createSmtpSource({ proxy: socks.url('me', 'secret') })
 * await socks.close()
 */
import net from 'node:net'

/** Options of {@link startSocksServer}. */
export interface FakeSocksOptions {
  /** Require RFC 1929 username/password with one of these (default: no authentication). */
  users?: Record<string, string>
  /** Local address of the proxy's outgoing connections (default 127.0.0.2). */
  outgoingAddress?: string
  /** Refuse CONNECT to these ports with reply 0x02 "connection not allowed by ruleset" (a proxy that blocks port 25). */
  blockedPorts?: number[]
  /** Never answer CONNECT to these ports, as a firewall that drops packets to port 25 makes a connect hang. */
  droppedPorts?: number[]
}

/** A running SOCKS5 server. */
export interface FakeSocksServer {
  host: string
  port: number
  /** `socks5://[user:pass@]127.0.0.1:port` */
  url(user?: string, pass?: string): string
  /** Client connections accepted. */
  readonly connections: number
  /** CONNECT requests granted. */
  readonly tunnels: number
  /** Tunnels open now, and most open at the same time. */
  readonly openTunnels: number
  readonly maxOpenTunnels: number
  /** Tunnels open now, and most open at once, per destination `ip:port`. */
  maxOpenTunnelsTo(destination: string): number
  /** Destinations asked for (`ip:port`), in order. */
  readonly destinations: string[]
  /** Clients refused for bad credentials (or for offering no acceptable method). */
  readonly authFailures: number
  close(): Promise<void>
}

const REPLY = { granted: 0, failure: 1, notAllowed: 2, hostUnreachable: 4, refused: 5, commandNotSupported: 7, addressNotSupported: 8 }

/** Reads exactly `n` bytes from a buffered socket reader. */
function createReader(sock: net.Socket) {
  let buf = Buffer.alloc(0)
  let want: { n: number; resolve: (b: Buffer | null) => void } | null = null
  let ended = false
  const pump = () => {
    if (want && buf.length >= want.n) {
      const out = buf.subarray(0, want.n)
      buf = buf.subarray(want.n)
      const w = want
      want = null
      w.resolve(out)
    }
  }
  const onData = (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk])
    pump()
  }
  sock.on('data', onData)
  sock.on('close', () => {
    ended = true
    const w = want
    want = null
    w?.resolve(null)
  })
  return {
    read(n: number): Promise<Buffer | null> {
      if (ended && buf.length < n) return Promise.resolve(null)
      return new Promise((resolve) => {
        want = { n, resolve }
        pump()
      })
    },
    /** Stops reading; returns what was buffered beyond the handshake. */
    detach(): Buffer {
      sock.off('data', onData)
      return buf
    },
  }
}

/** Starts the server on 127.0.0.1. */
export async function startSocksServer(options: FakeSocksOptions = {}): Promise<FakeSocksServer> {
  const outgoingAddress = options.outgoingAddress ?? '127.0.0.2'
  const sockets = new Set<net.Socket>()
  const destinations: string[] = []
  const openTo = new Map<string, number>()
  const maxTo = new Map<string, number>()
  let connections = 0
  let tunnels = 0
  let openTunnels = 0
  let maxOpenTunnels = 0
  let authFailures = 0

  const track = (s: net.Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => undefined)
  }

  async function handle(client: net.Socket): Promise<void> {
    const r = createReader(client)
    const hello = await r.read(2)
    if (!hello || hello[0] !== 5) return void client.destroy()
    const methods = await r.read(hello[1]!)
    if (!methods) return
    const method = options.users ? 2 : 0
    if (!methods.includes(method)) {
      authFailures++
      client.end(Buffer.from([5, 0xff]))
      return
    }
    client.write(Buffer.from([5, method]))
    if (options.users) {
      const head = await r.read(2)
      if (!head) return
      const user = (await r.read(head[1]!))?.toString('utf8')
      const plen = await r.read(1)
      const pass = plen ? (await r.read(plen[0]!))?.toString('utf8') : undefined
      const ok = user !== undefined && pass !== undefined && options.users[user] === pass
      if (!ok) {
        authFailures++
        client.end(Buffer.from([1, 1]))
        return
      }
      client.write(Buffer.from([1, 0]))
    }
    const req = await r.read(4)
    if (!req) return
    const reply = (code: number) => Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0])
    if (req[1] !== 1) return void client.end(reply(REPLY.commandNotSupported))
    let host: string
    if (req[3] === 1) host = [...((await r.read(4)) ?? [])].join('.')
    else if (req[3] === 4) {
      const b = await r.read(16)
      if (!b) return
      host = (b.toString('hex').match(/.{4}/g) ?? []).join(':')
    } else if (req[3] === 3) {
      const len = await r.read(1)
      host = len ? ((await r.read(len[0]!))?.toString('utf8') ?? '') : ''
    } else return void client.end(reply(REPLY.addressNotSupported))
    const portBuf = await r.read(2)
    if (!portBuf) return
    const port = portBuf.readUInt16BE(0)
    const dest = `${host}:${port}`
    destinations.push(dest)
    if (options.blockedPorts?.includes(port)) return void client.end(reply(REPLY.notAllowed))
    if (options.droppedPorts?.includes(port)) return // the client's connect times out
    const upstream = net.connect({ host, port, localAddress: outgoingAddress })
    track(upstream)
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      if (!client.destroyed) client.end(reply(err.code === 'ECONNREFUSED' ? REPLY.refused : REPLY.hostUnreachable))
    })
    upstream.once('connect', () => {
      tunnels++
      openTunnels++
      maxOpenTunnels = Math.max(maxOpenTunnels, openTunnels)
      const now = (openTo.get(dest) ?? 0) + 1
      openTo.set(dest, now)
      maxTo.set(dest, Math.max(maxTo.get(dest) ?? 0, now))
      upstream.once('close', () => {
        openTunnels--
        openTo.set(dest, (openTo.get(dest) ?? 1) - 1)
      })
      client.write(reply(REPLY.granted))
      const rest = r.detach()
      if (rest.length > 0) upstream.write(rest)
      client.pipe(upstream)
      upstream.pipe(client)
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
    })
  }

  const server = net.createServer((client) => {
    connections++
    track(client)
    handle(client).catch(() => client.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    host: '127.0.0.1',
    port,
    url(user, pass) {
      const cred = user === undefined ? '' : `${encodeURIComponent(user)}${pass === undefined ? '' : `:${encodeURIComponent(pass)}`}@`
      return `socks5://${cred}127.0.0.1:${port}`
    },
    get connections() {
      return connections
    },
    get tunnels() {
      return tunnels
    },
    get openTunnels() {
      return openTunnels
    },
    get maxOpenTunnels() {
      return maxOpenTunnels
    },
    maxOpenTunnelsTo(destination) {
      return maxTo.get(destination) ?? 0
    },
    destinations,
    get authFailures() {
      return authFailures
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
