/**
 * Helpers of the server suites: an in-memory server with a fixed clock, an org with a live and a test key, and
 * request shortcuts over `app.inject`.
 */
import { runServe } from '../src/cli/serve-command.js'
import { createServer, type RiskcheckServer, type ServerOptions } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'
import type { OrgRecord } from '../src/accounts/types.js'
import { fakeClock } from './clock.js'
import { memoryIO } from './helpers.js'

/** Parsed JSON of an injected response. */
export interface Res {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: any
  raw: string
}

/** A test server. */
export interface TestServer {
  app: RiskcheckServer
  clock: ReturnType<typeof fakeClock>
  org: OrgRecord
  /** Secret keys. */
  live: string
  test: string
  liveKeyId: string
  testKeyId: string
  /** Advances the rate limiter's clock (ms). */
  tick(ms?: number): void
  post(url: string, body: unknown, key?: string | null, headers?: Record<string, string>): Promise<Res>
  get(url: string, key?: string | null, headers?: Record<string, string>): Promise<Res>
  request(method: string, url: string, init?: { key?: string | null; payload?: string; headers?: Record<string, string> }): Promise<Res>
  close(): Promise<void>
}

/**
 * Starts an in-memory server (offline lookups, fixed clock, controllable rate-limit clock) with an org on `plan`
 * (default starter) holding a live and a test key.
 */
export async function startTestServer(
  options: Partial<ServerOptions> & { plan?: string; start?: string } = {},
): Promise<TestServer> {
  const clock = fakeClock(options.start ?? '2026-11-22T00:00:00Z')
  let rateMs = 1_000_000
  const { plan, start: _start, ...rest } = options
  const app = createServer({
    db: ':memory:',
    purgeIntervalMs: 0,
    rateLimitNow: () => rateMs,
    ...rest,
    riskcheck: { offline: true, now: clock.now, ...options.riskcheck },
  })
  await app.ready()
  const now = clock.now().getTime()
  const org = await app.store.createOrg({ name: 'Acme', planId: plan ?? 'starter' }, now)
  const live = await issueApiKey(app.store, { orgId: org.id, name: 'server' }, now)
  const test = await issueApiKey(app.store, { orgId: org.id, mode: 'test', name: 'ci' }, now)
  const request = async (method: string, url: string, init: { key?: string | null; payload?: string; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...init.headers }
    if (init.key) headers.authorization = `Bearer ${init.key}`
    const r = await app.inject({ method: method as 'GET', url, headers, ...(init.payload !== undefined ? { payload: init.payload } : {}) })
    let body: unknown
    try {
      body = r.body === '' ? undefined : JSON.parse(r.body)
    } catch {
      body = r.body
    }
    return { status: r.statusCode, headers: r.headers as Res['headers'], body, raw: r.body }
  }
  return {
    app,
    clock,
    org,
    live: live.secret,
    test: test.secret,
    liveKeyId: live.key.id,
    testKeyId: test.key.id,
    tick(ms = 1000) {
      rateMs += ms
    },
    post: (url, body, key = live.secret, headers = {}) =>
      request('POST', url, {
        key,
        payload: typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'content-type': 'application/json', ...headers },
      }),
    get: (url, key = live.secret, headers = {}) => request('GET', url, { key, headers }),
    request,
    close: () => app.close(),
  }
}

/** Moves `s`'s rate-limit clock a second before each of its `post`s and `get`s: every request in a second of its own. */
export function eachRequestOwnSecond(s: TestServer): void {
  const { post, get } = s
  s.post = (...a) => (s.tick(1000), post(...a))
  s.get = (...a) => (s.tick(1000), get(...a))
}

/**
 * Runs `riskcheck serve args` in this process (on loopback with `--port 0`) until `stop()`; resolves once it listens,
 * with its URL, its output so far, and `exit` (the exit code once stopped).
 */
export async function serveInProcess(args: string[]): Promise<{ url: string; io: ReturnType<typeof memoryIO>; stop(): void; exit: Promise<number> }> {
  const io = memoryIO()
  const stop = new AbortController()
  let url = ''
  let listened: () => void = () => undefined
  const listening = new Promise<void>((resolve) => (listened = resolve))
  const exit = runServe(args, io, {
    signal: stop.signal,
    onListening: (u) => {
      url = u
      listened()
    },
  })
  // A failed start resolves `exit` without listening.
  await Promise.race([listening, exit.then((code) => Promise.reject(new Error(`serve exited ${code}: ${io.err()}`)))])
  return { url, io, stop: () => stop.abort(), exit }
}
