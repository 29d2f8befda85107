/**
 * Helpers for the webhook suites and benchmark: a real receiver on loopback (node:http or node:https with the
 * self-signed fixture certificate) that records every request with its raw body, and a fake resolver (name →
 * addresses) standing in for DNS — no test touches the real internet.
 */
import { readFileSync } from 'node:fs'
import type { LookupAddress, LookupOptions } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo, LookupFunction } from 'node:net'
import { fileURLToPath } from 'node:url'

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/webhooks/${name}`, import.meta.url))

/** The receiver's certificate (PEM) — pass as `ca` to trust it. */
export const RECEIVER_CERT = readFileSync(fixture('receiver-cert.pem'), 'utf8')
const RECEIVER_KEY = readFileSync(fixture('receiver-key.pem'), 'utf8')

/** A request as the receiver saw it. */
export interface ReceivedRequest {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  /** the raw body bytes as received */
  rawBody: Buffer
  remotePort: number
}

/** How the receiver answers one request. */
export type ReceiverHandler = (req: ReceivedRequest, res: http.ServerResponse) => unknown

/** A running receiver. */
export interface Receiver {
  /** base URL, e.g. http://127.0.0.1:41234 */
  url: string
  port: number
  requests: ReceivedRequest[]
  /** replace the handler */
  handle(fn: ReceiverHandler): void
  close(): Promise<void>
}

/**
 * Starts a receiver on 127.0.0.1 (an ephemeral port). Default answer: 200 "ok". The request is recorded before the
 * handler runs.
 */
export async function startReceiver(options: { tls?: boolean; handler?: ReceiverHandler } = {}): Promise<Receiver> {
  let handler: ReceiverHandler =
    options.handler ??
    ((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.end('ok')
    })
  const requests: ReceivedRequest[] = []
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const rec: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawBody: Buffer.concat(chunks),
        remotePort: req.socket.remotePort ?? 0,
      }
      requests.push(rec)
      Promise.resolve(handler(rec, res) as unknown).catch(() => {
        res.destroy()
      })
    })
  }
  const server = options.tls ? https.createServer({ cert: RECEIVER_CERT, key: RECEIVER_KEY }, onRequest) : http.createServer(onRequest)
  server.keepAliveTimeout = 5000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    handle(fn) {
      handler = fn
    },
    close() {
      return new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
    },
  }
}

/** A fake resolver: name → addresses (change the table to simulate DNS changing); records the names asked. */
export function fakeDns(table: Record<string, string[]>): LookupFunction & { calls: string[]; table: Record<string, string[]> } {
  const calls: string[] = []
  const fn = ((
    hostname: string,
    opts: LookupOptions,
    cb: (err: NodeJS.ErrnoException | null, a: string | LookupAddress[], f?: number) => void,
  ) => {
    calls.push(hostname)
    const addrs = table[hostname]
    setImmediate(() => {
      if (!addrs) {
        cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0)
        return
      }
      const list = addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
      if (opts.all) cb(null, list)
      else cb(null, list[0]?.address ?? '', list[0]?.family ?? 4)
    })
  }) as LookupFunction & { calls: string[]; table: Record<string, string[]> }
  fn.calls = calls
  fn.table = table
  return fn
}
