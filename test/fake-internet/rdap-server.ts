/**
 * A loopback RDAP server for tests: serves an IANA-shaped bootstrap file (`/dns.json`) that maps the test TLDs
 * to itself, and real-shaped RDAP domain objects (RFC 9083, ICANN RDAP response profile) built from the stored
 * registry responses in test/fixtures/rdap/ with the name, event dates and links rewritten.
 *
 * Routes:
 *   GET /dns.json                         the bootstrap file
 *   GET /rdap/domain/<name>               the registry answer (unknown names → 404 with an RFC 9083 §6 body)
 *   GET /registrar/domain/<name>          a registrar answer (the registry object's `related` link points here)
 *
 * Listens on 127.0.0.1 only. Nothing here touches the real internet.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'

const FIXTURE_DIR = new URL('../fixtures/rdap/', import.meta.url)

/** The stored registry responses a domain object can be built from. */
export type RdapFixtureName = 'verisign-com-google' | 'verisign-com-themarquetry' | 'norid-no-norway'

/** How the server answers for one domain. */
export type RdapDomainSpec =
  | {
      kind: 'domain'
      /** base document (default verisign-com-google) */
      fixture?: RdapFixtureName
      /** registration event; null removes it; undefined keeps the fixture's */
      created?: Date | string | null
      /** "last changed" event; null/undefined: none (Verisign's registry answers carry none) */
      updated?: Date | string | null
      /** expiration event; null removes it; undefined keeps the fixture's */
      expires?: Date | string | null
      /** replaces the registrar entity's name */
      registrar?: string
      /** replaces `status` */
      statuses?: string[]
      /** replaces the name servers */
      nameservers?: string[]
      /** replaces `secureDNS.delegationSigned`; null removes `secureDNS` */
      dnssec?: boolean | null
      /** extra delay before this answer, ms */
      delayMs?: number
    }
  /** HTTP 404 with an RFC 9083 error body (the name is not registered) */
  | { kind: 'not_found'; delayMs?: number }
  /** HTTP 200 with truncated JSON */
  | { kind: 'malformed'; delayMs?: number }
  /** HTTP 200 with a registrar entity object instead of a domain object */
  | { kind: 'wrong_object'; delayMs?: number }
  /** an HTTP error status (500, 429 …), optionally with Retry-After */
  | { kind: 'http_error'; status: number; retryAfter?: string; delayMs?: number }

/** One request the server received. */
export interface RdapRequestLog {
  method: string
  path: string
  accept: string | undefined
}

/** Options of {@link startRdapServer}. */
export interface StartRdapServerOptions {
  /** answers by domain name (lower-case ASCII) */
  domains: Record<string, RdapDomainSpec>
  /** delay before every answer, ms (default 0) */
  delayMs?: number
  /** extra TLDs mapped to this server in the bootstrap (the TLDs of `domains` are always included) */
  tlds?: string[]
  /** the clock for the "last update of RDAP database" event (default now) */
  now?: () => Date
}

/** A running fake RDAP server. */
export interface RdapServer {
  /** http://127.0.0.1:<port> */
  url: string
  /** the bootstrap file's URL */
  bootstrapUrl: string
  /** the bootstrap file's content (IANA dns.json shape), usable as `bootstrapData` */
  bootstrapData: { version: string; publication: string; description: string; services: string[][][] }
  /** every request received, in order */
  requests: RdapRequestLog[]
  /** replace or add a domain's answer while running */
  setDomain(name: string, spec: RdapDomainSpec): void
  /** stop listening, drop open connections and pending delayed answers */
  close(): Promise<void>
}

/** Read a stored fixture (parsed JSON). */
export function readRdapFixture(name: RdapFixtureName | 'error-404' | 'wrong-object-class'): Record<string, unknown> {
  return JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURE_DIR), 'utf8')) as Record<string, unknown>
}

/** The truncated-JSON fixture's text. */
export function readMalformedRdapFixture(): string {
  return readFileSync(new URL('malformed-truncated.json.txt', FIXTURE_DIR), 'utf8')
}

/** A date `days` days (may be fractional) before `now`. */
export function daysBefore(now: Date, days: number): Date {
  return new Date(now.getTime() - days * 86_400_000)
}

/** A date `days` days (may be fractional) after `now`. */
export function daysAfter(now: Date, days: number): Date {
  return new Date(now.getTime() + days * 86_400_000)
}

/**
 * Build the registry domain object for `name` from a fixture and a spec, with links pointing at `baseUrl`.
 * Dates are written as RDAP does (`2021-03-16T17:07:37Z`, no milliseconds).
 */
export function buildRdapDomainObject(
  name: string,
  spec: Extract<RdapDomainSpec, { kind: 'domain' }>,
  baseUrl: string,
  now: Date = new Date(),
): Record<string, unknown> {
  const doc = readRdapFixture(spec.fixture ?? 'verisign-com-google')
  const isVerisign = (spec.fixture ?? 'verisign-com-google').startsWith('verisign')
  const ldh = isVerisign ? name.toUpperCase() : name
  doc['ldhName'] = ldh
  const self = `${baseUrl}/rdap/domain/${ldh}`
  const related = `${baseUrl}/registrar/domain/${ldh}`
  doc['links'] = isVerisign
    ? [
        { value: self, rel: 'self', href: self, type: 'application/rdap+json' },
        { value: related, rel: 'related', href: related, type: 'application/rdap+json' },
      ]
    : [{ href: self, rel: 'self', type: 'application/rdap+json', value: self }]

  const events = Array.isArray(doc['events']) ? (doc['events'] as Array<{ eventAction: string; eventDate: string }>) : []
  const setEvent = (action: string, value: Date | string | null | undefined, keepWhenUndefined: boolean) => {
    const i = events.findIndex((e) => e.eventAction === action)
    if (value === undefined) {
      if (!keepWhenUndefined && i >= 0) events.splice(i, 1)
      return
    }
    if (value === null) {
      if (i >= 0) events.splice(i, 1)
      return
    }
    const date = typeof value === 'string' ? value : rdapDate(value)
    if (i >= 0) events[i] = { eventAction: action, eventDate: date }
    else events.push({ eventAction: action, eventDate: date })
  }
  setEvent('registration', spec.created, true)
  setEvent('expiration', spec.expires, true)
  setEvent('last changed', spec.updated, isVerisign ? false : true)
  const dbUpdate = events.findIndex((e) => e.eventAction === 'last update of RDAP database')
  if (dbUpdate >= 0) events[dbUpdate] = { eventAction: 'last update of RDAP database', eventDate: rdapDate(now) }
  doc['events'] = events

  if (spec.registrar !== undefined && Array.isArray(doc['entities'])) {
    for (const ent of doc['entities'] as Array<Record<string, unknown>>) {
      const roles = ent['roles']
      if (Array.isArray(roles) && roles.includes('registrar')) {
        ent['vcardArray'] = ['vcard', [['version', {}, 'text', '4.0'], ['fn', {}, 'text', spec.registrar]]]
      }
    }
  }
  if (spec.statuses !== undefined) doc['status'] = spec.statuses
  if (spec.nameservers !== undefined) {
    doc['nameservers'] = spec.nameservers.map((ns) => ({ objectClassName: 'nameserver', ldhName: isVerisign ? ns.toUpperCase() : ns }))
  }
  if (spec.dnssec === null) delete doc['secureDNS']
  else if (spec.dnssec !== undefined) doc['secureDNS'] = { delegationSigned: spec.dnssec }
  return doc
}

/**
 * Start the fake RDAP server on 127.0.0.1 (random port).
 *
 * @example
 * const rdap = await startRdapServer({ domains: { 'old-domain.test': { kind: 'domain', created: daysBefore(now, 4000) } } })
 * const source = createRdapSource({ bootstrapUrl: rdap.bootstrapUrl })
 * …
 * await rdap.close()
 */
export async function startRdapServer(opts: StartRdapServerOptions): Promise<RdapServer> {
  const domains = new Map<string, RdapDomainSpec>(Object.entries(opts.domains).map(([k, v]) => [k.toLowerCase(), v]))
  const now = opts.now ?? (() => new Date())
  const requests: RdapRequestLog[] = []
  const timers = new Set<NodeJS.Timeout>()
  let baseUrl = ''

  const tlds = (): string[] => {
    const set = new Set<string>((opts.tlds ?? []).map((t) => t.toLowerCase()))
    for (const name of domains.keys()) {
      const last = name.split('.').pop()
      if (last !== undefined && last !== '') set.add(last)
    }
    return [...set].sort()
  }
  const bootstrap = () => ({
    version: '1.0',
    publication: '2026-11-01T00:00:00Z',
    description: 'RDAP bootstrap file for Domain Name System registrations (riskcheck loopback test server)',
    services: [[tlds(), [`${baseUrl}/rdap/`]]],
  })

  const send = (res: ServerResponse, status: number, body: string, contentType: string, headers: Record<string, string> = {}) => {
    if (res.destroyed) return
    res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body), ...headers })
    res.end(body)
  }
  const later = (ms: number, fn: () => void) => {
    if (ms <= 0) return fn()
    const t = setTimeout(() => {
      timers.delete(t)
      fn()
    }, ms)
    timers.add(t)
  }

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/')
    requests.push({ method: req.method ?? 'GET', path, accept: req.headers.accept })
    const rdapJson = 'application/rdap+json'
    if (path === '/dns.json') {
      return later(opts.delayMs ?? 0, () => send(res, 200, JSON.stringify(bootstrap()), 'application/json'))
    }
    const registry = path.startsWith('/rdap/domain/') ? path.slice('/rdap/domain/'.length) : null
    const registrar = path.startsWith('/registrar/domain/') ? path.slice('/registrar/domain/'.length) : null
    const name = (registry ?? registrar ?? '').toLowerCase()
    const spec = domains.get(name)
    const notFound = () => send(res, 404, JSON.stringify(readRdapFixture('error-404')), rdapJson)
    if ((registry === null && registrar === null) || spec === undefined) {
      return later(opts.delayMs ?? 0, notFound)
    }
    const delay = (opts.delayMs ?? 0) + (spec.delayMs ?? 0)
    later(delay, () => {
      switch (spec.kind) {
        case 'not_found':
          return notFound()
        case 'malformed':
          return send(res, 200, readMalformedRdapFixture(), rdapJson)
        case 'wrong_object':
          return send(res, 200, JSON.stringify(readRdapFixture('wrong-object-class')), rdapJson)
        case 'http_error':
          return send(
            res,
            spec.status,
            JSON.stringify({ errorCode: spec.status, title: 'Error', description: ['test error'] }),
            rdapJson,
            spec.retryAfter === undefined ? {} : { 'retry-after': spec.retryAfter },
          )
        case 'domain': {
          if (registrar !== null) {
            // the registrar's answer: only what a registrar adds (a "last changed" event)
            const doc = {
              objectClassName: 'domain',
              ldhName: name,
              rdapConformance: ['rdap_level_0', 'icann_rdap_response_profile_0'],
              events: [{ eventAction: 'last changed', eventDate: rdapDate(now()) }],
            }
            return send(res, 200, JSON.stringify(doc), rdapJson)
          }
          return send(res, 200, JSON.stringify(buildRdapDomainObject(name, spec, baseUrl, now())), rdapJson)
        }
      }
    })
  }

  const server = createServer(handle)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  baseUrl = `http://127.0.0.1:${port}`

  return {
    url: baseUrl,
    bootstrapUrl: `${baseUrl}/dns.json`,
    get bootstrapData() {
      return bootstrap()
    },
    requests,
    setDomain(name, spec) {
      domains.set(name.toLowerCase(), spec)
    },
    async close() {
      for (const t of timers) clearTimeout(t)
      timers.clear()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** RDAP's date form: ISO 8601 UTC without milliseconds. */
function rdapDate(d: Date): string {
  return d.toISOString().replace('.000Z', 'Z').replace(/\.\d{3}Z$/, 'Z')
}

/**
 * The standard test domains (TLD `.test`), dates relative to `now`:
 * old-domain.test (registered ~11 years ago, Verisign shape), new-domain.test (3 days ago, 1-year registration),
 * recent-domain.test (45 days ago), expiring-domain.test (old, expires in 10 days), cctld-domain.test (Norid
 * shape, no expiration), unregistered.test (404), slow-domain.test (answers after `slowMs`),
 * malformed.test (truncated JSON), wrong-object.test (an entity object), broken.test (HTTP 500).
 */
export function standardRdapDomains(now: Date, slowMs = 3_000): Record<string, RdapDomainSpec> {
  return {
    'old-domain.test': { kind: 'domain', fixture: 'verisign-com-google', created: daysBefore(now, 4000), expires: daysAfter(now, 700) },
    'new-domain.test': { kind: 'domain', fixture: 'verisign-com-themarquetry', created: daysBefore(now, 3), expires: daysAfter(now, 362) },
    'recent-domain.test': { kind: 'domain', fixture: 'verisign-com-themarquetry', created: daysBefore(now, 45), expires: daysAfter(now, 320) },
    'expiring-domain.test': { kind: 'domain', fixture: 'verisign-com-google', created: daysBefore(now, 2000), expires: daysAfter(now, 10) },
    'cctld-domain.test': { kind: 'domain', fixture: 'norid-no-norway', created: daysBefore(now, 600), updated: daysBefore(now, 20) },
    'unregistered.test': { kind: 'not_found' },
    'slow-domain.test': { kind: 'domain', fixture: 'verisign-com-google', created: daysBefore(now, 4000), delayMs: slowMs },
    'malformed.test': { kind: 'malformed' },
    'wrong-object.test': { kind: 'wrong_object' },
    'broken.test': { kind: 'http_error', status: 500 },
  }
}
