/**
 * What the recheck suites share: a loopback mail world (DNS + SMTP) whose server defers (450 greylisted) the first
 * attempts at each address and then accepts or refuses it, a server wired to it on a fake clock, an org with live
 * keys, and a webhook receiver that keeps every payload.
 */
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer, type RiskcheckServer, type ServerOptions } from '../src/server/app.js'
import type { EventPayload } from '../src/schema.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { fakeClock } from './clock.js'
import { startDnsServer, type FakeDnsServer, type Zones } from './fake-internet/dns-server.js'
import { startSmtpServer, type FakeSmtpServer, type RcptDecision } from './fake-internet/smtp-server.js'

export const DOMAIN = 'greylist-corp.com'

/** How the mail server treats one local part: deferred `defer` times, then `then`. */
export interface MailboxScript {
  defer: number
  then: 'accept' | 'reject'
}

/** The fake mail internet of the suite: `script` decides, `attempts` counts RCPT TO per address. */
export interface GreyWorld {
  dns: FakeDnsServer
  smtp: FakeSmtpServer
  script: Map<string, MailboxScript>
  attempts: Map<string, number>
  close(): Promise<void>
}

export async function startGreyWorld(): Promise<GreyWorld> {
  const zones: Zones = {
    [DOMAIN]: { MX: [{ priority: 10, exchange: `mx.${DOMAIN}` }], TXT: ['v=spf1 mx -all'] },
    [`mx.${DOMAIN}`]: { A: ['127.0.0.1'] },
    [`_dmarc.${DOMAIN}`]: { TXT: ['v=DMARC1; p=reject'] },
  }
  const dns = await startDnsServer({ zones })
  const script = new Map<string, MailboxScript>()
  const attempts = new Map<string, number>()
  const smtp = await startSmtpServer({
    onRcpt: (address): RcptDecision => {
      const local = address.split('@')[0]!.toLowerCase()
      const s = script.get(local)
      if (!s) return 'reject' // the catch-all probe's random local part: not a catch-all domain
      const n = (attempts.get(local) ?? 0) + 1
      attempts.set(local, n)
      return n <= s.defer ? 'greylist' : s.then
    },
  })
  return { dns, smtp, script, attempts, close: async () => void (await Promise.all([dns.close(), smtp.close()])) }
}

/** A server on `db` whose lookups reach the world, on `clock`, with rechecks at 5, 15 and 60 minutes. */
export function greyServer(world: GreyWorld, db: ServerOptions['db'], clock: ReturnType<typeof fakeClock>, sent: EventPayload[], extra: Partial<ServerOptions> = {}): RiskcheckServer {
  let rate = 1_000_000
  return createServer({
    db,
    dashboard: false,
    purgeIntervalMs: 0,
    webhookIntervalMs: 0,
    instanceLeaseMs: 3_600_000,
    unsafeAllowLoopbackWebhooks: true,
    rateLimitNow: () => (rate += 1000),
    recheck: { intervalMs: 0 },
    webhookDeliver: async (req) => {
      sent.push(JSON.parse(req.body) as EventPayload)
      return { ok: true, status: 200, durationMs: 1, responseBody: '' } as never
    },
    riskcheck: {
      now: clock.now,
      dns: { servers: [world.dns.address], timeoutMs: 500, tries: 1 },
      smtp: { port: world.smtp.port, allowPrivateHosts: true, timeoutMs: 2000, heloName: 'verifier.riskcheck-tests.org' },
      rdap: { enabled: false },
    },
    ...extra,
  })
}

/** An org with a key for lookups, bulk jobs and webhooks, and an endpoint subscribed to every event. */
export async function orgWithEndpoint(app: RiskcheckServer, store: Store, nowMs: number): Promise<{ orgId: string; key: string }> {
  const org = await store.createOrg({ name: 'Acme', planId: 'starter' }, nowMs)
  const key = (await issueApiKey(store, { orgId: org.id, name: 'all', scopes: ['lookup', 'bulk', 'webhooks', 'account:read'] }, nowMs)).secret
  const r = await call(app, 'POST', '/v1/webhook-endpoints', key, { url: 'http://127.0.0.1:8099/hook', events: ['*'] })
  if (r.status !== 201) throw new Error(`endpoint: ${JSON.stringify(r.body)}`)
  return { orgId: org.id, key }
}

export async function call(app: RiskcheckServer, method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await app.inject({
    method: method as 'GET',
    url: path,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  })
  return { status: r.statusCode, body: r.body === '' ? undefined : JSON.parse(r.body) }
}

/** The credits an org has left. */
export async function creditsLeft(app: RiskcheckServer, key: string): Promise<number> {
  const r = await call(app, 'GET', '/v1/account', key)
  return r.body.data.credits.total_available as number
}

/** Polls a bulk job until `done(job)` (a count of polls, never a wall-clock bound). */
export async function waitForJob(app: RiskcheckServer, key: string, id: string, done: (job: any) => boolean): Promise<any> {
  for (let i = 0; i < 2000; i++) {
    const r = await call(app, 'GET', `/v1/bulk/jobs/${id}`, key)
    if (done(r.body.data)) return r.body.data
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`bulk job ${id} never reached the state`)
}

export const MINUTE = 60_000
