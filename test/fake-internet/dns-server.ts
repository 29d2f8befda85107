/**
 * A real DNS server on 127.0.0.1 (UDP and TCP on the same port), built with `dns-packet`, serving declarative test
 * zones. For tests and benchmarks only: no recursion, no DNSSEC, no zone cuts.
 *
 * Like a working recursive resolver, it knows the delegation of every top-level domain: a bare TLD (`com`, `io`, …)
 * that the zones do not define answers NS `a.nic.<tld>`. `everyName` makes it misbehave for every name instead:
 * `'nxdomain'` is the lying resolver of private networks and sandboxes (NXDOMAIN even for `com.`), `'timeout'` a
 * server that never answers.
 *
 * @example
 * const dns = await startDnsServer({ zones: { 'example.com': { MX: [{ priority: 10, exchange: 'mx.example.com' }] } } })
 * const source = createDnsSource({ servers: [dns.address] })
 * ...
 * await dns.close()
 */
import dgram from 'node:dgram'
import net from 'node:net'
import dnsPacket from 'dns-packet'
import type { Answer, Packet, Question } from 'dns-packet'

/** How a name misbehaves instead of answering normally. */
export type DnsBehaviour = 'timeout' | 'servfail' | 'refused' | { delayMs: number }

/** The records of one name. An array TXT entry is one record made of several character-strings. */
export interface ZoneEntry {
  MX?: Array<{ priority: number; exchange: string }>
  A?: string[]
  AAAA?: string[]
  TXT?: Array<string | string[]>
  NS?: string[]
  PTR?: string[]
  CNAME?: string
  /** TTL of every record of this name (default 300). */
  ttl?: number
  behaviour?: DnsBehaviour
}

/** Names (lower-case, no trailing dot; `*.example.com` is a wildcard) → records. */
export type Zones = Record<string, ZoneEntry>

/** Options of {@link startDnsServer}. */
export interface FakeDnsOptions {
  zones: Zones
  port?: number
  /** Every name (TLDs included) behaves like this instead of its zone entry. */
  everyName?: DnsBehaviour | 'nxdomain'
  /** Called for each question as it arrives (before it is answered). */
  onQuery?: (query: { name: string; type: string }) => void
}

/** A running fake DNS server. */
export interface FakeDnsServer {
  host: '127.0.0.1'
  port: number
  /** `'127.0.0.1:PORT'`, ready for `createDnsSource({ servers: [address] })`. */
  address: string
  /** Every question received (UDP and TCP), in order. */
  queries: Array<{ name: string; type: string; transport?: 'udp' | 'tcp' }>
  /**
   * Most delayed questions held at the same time (received, answer not sent yet): how many a client had in flight
   * at once — concurrency counted, not timed. Reset with `resetPending()`.
   */
  maxPending(): number
  resetPending(): void
  /** Replaces the zones (queries already counted stay). */
  setZones(zones: Zones): void
  close(): Promise<void>
}

const RCODE_NOERROR = 0
const RCODE_SERVFAIL = 2
const RCODE_NXDOMAIN = 3
const RCODE_NOTIMP = 4
const RCODE_REFUSED = 5
const SUPPORTED: ReadonlySet<string> = new Set(['A', 'AAAA', 'MX', 'TXT', 'NS', 'PTR', 'CNAME'])

function normalize(name: string): string {
  const n = name.toLowerCase()
  return n.endsWith('.') ? n.slice(0, -1) : n
}

function normalizeZones(zones: Zones): Map<string, ZoneEntry> {
  const map = new Map<string, ZoneEntry>()
  for (const [name, entry] of Object.entries(zones)) map.set(normalize(name), entry)
  return map
}

/** Exact name, else the closest `*.parent` wildcard. */
function findEntry(zones: Map<string, ZoneEntry>, name: string): ZoneEntry | undefined {
  const exact = zones.get(name)
  if (exact) return exact
  let rest = name
  for (;;) {
    const dot = rest.indexOf('.')
    if (dot < 0) return undefined
    rest = rest.slice(dot + 1)
    const wild = zones.get(`*.${rest}`)
    if (wild) return wild
  }
}

function recordsOf(entry: ZoneEntry, name: string, type: string): Answer[] {
  const ttl = entry.ttl ?? 300
  switch (type) {
    case 'A':
      return (entry.A ?? []).map((data) => ({ name, type: 'A', ttl, class: 'IN', data }))
    case 'AAAA':
      return (entry.AAAA ?? []).map((data) => ({ name, type: 'AAAA', ttl, class: 'IN', data }))
    case 'MX':
      return (entry.MX ?? []).map((mx) => ({
        name,
        type: 'MX',
        ttl,
        class: 'IN',
        data: { preference: mx.priority, exchange: mx.exchange === '' ? '.' : mx.exchange },
      }))
    case 'TXT':
      return (entry.TXT ?? []).map((t) => ({ name, type: 'TXT', ttl, class: 'IN', data: Array.isArray(t) ? t : [t] }))
    case 'NS':
      return (entry.NS ?? []).map((data) => ({ name, type: 'NS', ttl, class: 'IN', data }))
    case 'PTR':
      return (entry.PTR ?? []).map((data) => ({ name, type: 'PTR', ttl, class: 'IN', data }))
    case 'CNAME':
      return entry.CNAME ? [{ name, type: 'CNAME', ttl, class: 'IN', data: entry.CNAME }] : []
    default:
      return []
  }
}

interface Resolution {
  rcode: number
  answers: Answer[]
  behaviour?: DnsBehaviour
}

/** The delegation of a top-level domain the zones do not define, as a recursive resolver would answer it. */
function tldDelegation(qname: string, type: string): Resolution | null {
  if (qname === '' || qname.includes('.')) return null
  if (type !== 'NS') return { rcode: RCODE_NOERROR, answers: [] }
  return { rcode: RCODE_NOERROR, answers: [{ name: qname, type: 'NS', ttl: 172_800, class: 'IN', data: `a.nic.${qname}` }] }
}

function resolveQuestion(zones: Map<string, ZoneEntry>, q: Question): Resolution {
  const qname = normalize(q.name)
  const type = String(q.type)
  if (!findEntry(zones, qname)) {
    const tld = tldDelegation(qname, type)
    if (tld) return tld
  }
  if (!SUPPORTED.has(type)) {
    const e = findEntry(zones, qname)
    return e ? { rcode: RCODE_NOERROR, answers: [] } : { rcode: RCODE_NXDOMAIN, answers: [] }
  }
  const answers: Answer[] = []
  let name = qname
  let behaviour: DnsBehaviour | undefined
  for (let hops = 0; hops < 8; hops++) {
    const entry = findEntry(zones, name)
    if (!entry) return { rcode: hops === 0 ? RCODE_NXDOMAIN : RCODE_NOERROR, answers, ...(behaviour ? { behaviour } : {}) }
    if (hops === 0 && entry.behaviour) behaviour = entry.behaviour
    if (entry.CNAME && type !== 'CNAME') {
      answers.push(...recordsOf(entry, name, 'CNAME'))
      name = normalize(entry.CNAME)
      continue
    }
    answers.push(...recordsOf(entry, name, type))
    break
  }
  return { rcode: RCODE_NOERROR, answers, ...(behaviour ? { behaviour } : {}) }
}

/**
 * Starts the server. `port` 0 (default) picks a free port; UDP and TCP listen on the same one.
 * Names not in `zones` answer NXDOMAIN; names present without the asked type answer NOERROR with no records.
 */
export async function startDnsServer(options: FakeDnsOptions): Promise<FakeDnsServer> {
  let zones = normalizeZones(options.zones)
  const queries: Array<{ name: string; type: string; transport?: 'udp' | 'tcp' }> = []
  const timers = new Set<NodeJS.Timeout>()
  const sockets = new Set<net.Socket>()
  let pending = 0
  let maxPending = 0

  /** Builds the response for one query, or null when the server must stay silent. */
  function answer(query: Packet, maxUdp: number | null, respond: (buf: Buffer) => void): void {
    const transport = maxUdp === null ? 'tcp' : 'udp'
    const q = query.questions?.[0]
    const base = { id: query.id ?? 0, type: 'response' as const, questions: query.questions ?? [] }
    const rdFlag = (query.flags ?? 0) & dnsPacket.RECURSION_DESIRED
    if (!q) {
      respond(dnsPacket.encode({ ...base, flags: rdFlag | RCODE_NOTIMP, answers: [] }))
      return
    }
    const entry = { name: normalize(q.name), type: String(q.type) }
    // `transport` is not enumerable, so `queries` compares equal to plain { name, type } objects in tests
    Object.defineProperty(entry, 'transport', { value: transport, enumerable: false })
    queries.push(entry)
    options.onQuery?.({ name: entry.name, type: entry.type })
    const every = options.everyName
    const res: Resolution =
      every === 'nxdomain'
        ? { rcode: RCODE_NXDOMAIN, answers: [] }
        : every !== undefined
          ? { rcode: RCODE_NOERROR, answers: [], behaviour: every }
          : resolveQuestion(zones, q)
    const b = res.behaviour
    if (b === 'timeout') return
    let rcode = res.rcode
    if (b === 'servfail') rcode = RCODE_SERVFAIL
    if (b === 'refused') rcode = RCODE_REFUSED
    const answers = rcode === RCODE_NOERROR || rcode === RCODE_NXDOMAIN ? res.answers : []
    let flags = dnsPacket.AUTHORITATIVE_ANSWER | rdFlag | rcode
    let packet = dnsPacket.encode({ ...base, flags, answers })
    if (maxUdp !== null && packet.length > maxUdp) {
      flags |= dnsPacket.TRUNCATED_RESPONSE
      packet = dnsPacket.encode({ ...base, flags, answers: [] })
    }
    const send = (): void => respond(packet)
    if (typeof b === 'object' && b.delayMs > 0) {
      maxPending = Math.max(maxPending, ++pending)
      const t = setTimeout(() => {
        timers.delete(t)
        pending--
        send()
      }, b.delayMs)
      timers.add(t)
    } else send()
  }

  const onUdpMessage = (udp: dgram.Socket, msg: Buffer, rinfo: dgram.RemoteInfo): void => {
    let query: Packet
    try {
      query = dnsPacket.decode(msg)
    } catch {
      return
    }
    const opt = (query.additionals ?? []).find((a) => a.type === 'OPT') as { udpPayloadSize?: number } | undefined
    const maxUdp = Math.max(512, opt?.udpPayloadSize ?? 512)
    answer(query, maxUdp, (buf) => {
      udp.send(buf, rinfo.port, rinfo.address)
    })
  }
  const createUdp = (): dgram.Socket => {
    const udp = dgram.createSocket('udp4')
    udp.on('message', (msg, rinfo) => onUdpMessage(udp, msg, rinfo))
    return udp
  }

  const tcp = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let pending = Buffer.alloc(0)
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 2) {
        const len = pending.readUInt16BE(0)
        if (pending.length < 2 + len) break
        const msg = pending.subarray(2, 2 + len)
        pending = pending.subarray(2 + len)
        let query: Packet
        try {
          query = dnsPacket.decode(msg)
        } catch {
          socket.destroy()
          return
        }
        answer(query, null, (buf) => {
          if (socket.destroyed) return
          const prefix = Buffer.alloc(2)
          prefix.writeUInt16BE(buf.length, 0)
          socket.write(Buffer.concat([prefix, buf]))
        })
      }
    })
  })

  const { udp, port } = await bindBoth(createUdp, tcp, options.port ?? 0)

  return {
    host: '127.0.0.1',
    port,
    address: `127.0.0.1:${port}`,
    queries,
    maxPending: () => maxPending,
    resetPending() {
      maxPending = pending
    },
    setZones(z) {
      zones = normalizeZones(z)
    },
    close() {
      for (const t of timers) clearTimeout(t)
      timers.clear()
      for (const s of sockets) s.destroy()
      return new Promise<void>((resolve) => {
        let left = 2
        const done = (): void => {
          if (--left === 0) resolve()
        }
        udp.close(done)
        tcp.close(() => done())
      })
    },
  }
}

/** Binds UDP then TCP to the same port (retrying with a new random port if TCP's is taken). */
async function bindBoth(
  createUdp: () => dgram.Socket,
  tcp: net.Server,
  wanted: number,
): Promise<{ udp: dgram.Socket; port: number }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const udp = createUdp()
    const port = await new Promise<number>((resolve, reject) => {
      const onError = (err: Error): void => reject(err)
      udp.once('error', onError)
      udp.bind(wanted, '127.0.0.1', () => {
        udp.off('error', onError)
        resolve(udp.address().port)
      })
    })
    const ok = await new Promise<boolean>((resolve) => {
      const onError = (): void => resolve(false)
      tcp.once('error', onError)
      tcp.listen(port, '127.0.0.1', () => {
        tcp.off('error', onError)
        resolve(true)
      })
    })
    if (ok) return { udp, port }
    await new Promise<void>((resolve) => udp.close(() => resolve()))
    if (wanted !== 0) throw new Error(`fake DNS: TCP port ${wanted} is taken`)
  }
  throw new Error('fake DNS: could not bind UDP and TCP to one port')
}
