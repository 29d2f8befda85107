/**
 * The settings of `riskcheck serve`, each a flag and an environment variable (flags win over the environment), so
 * the server runs the same from a shell, a container or a process manager. Every flag and its variable: docs/deployment.md
 * (and `serve --help`); every lookup flag is read as RISKCHECK_<FLAG> too (--dns-server → RISKCHECK_DNS_SERVER,
 * comma-separated; --offline → RISKCHECK_OFFLINE=1 …). Booleans read 1/true/yes/on or 0/false/no/off.
 */
import { isIP } from 'node:net'
import type { ParseArgsConfig } from 'node:util'
import { parseDuration } from '../data/catalog.js'
import { GLOBAL_FLAGS, UsageError } from './shared.js'

type Options = NonNullable<ParseArgsConfig['options']>

/** Flags of `serve` itself, with their help. */
export const SERVE_FLAGS: Options = {
  host: { type: 'string' },
  port: { type: 'string' },
  db: { type: 'string' },
  'database-url': { type: 'string' },
  'no-migrate': { type: 'boolean' },
  'redis-url': { type: 'string' },
  'redis-prefix': { type: 'string' },
  'queue-lock-timeout': { type: 'string' },
  'database-timeout': { type: 'string' },
  'no-workers': { type: 'boolean' },
  json: { type: 'boolean' },
  'log-level': { type: 'string' },
  'unsafe-allow-loopback-webhooks': { type: 'boolean' },
  'mail-url': { type: 'string' },
  'public-url': { type: 'string' },
  'refresh-data': { type: 'string' },
  'data-source': { type: 'string', multiple: true },
  'metrics-port': { type: 'string' },
  'drain-timeout': { type: 'string' },
  'trust-proxy': { type: 'string' },
  'docs-url': { type: 'string' },
  'velocity-secret': { type: 'string' },
  'no-velocity': { type: 'boolean' },
  'outcome-retention-days': { type: 'string' },
  'lists-compiled-items': { type: 'string' },
  'recheck-delays': { type: 'string' },
  'no-recheck': { type: 'boolean' },
}

/** Lookup flags that mean nothing to a server (per request, or output formatting) and so have no variable. */
const NOT_FOR_SERVE = new Set(['help', 'mode', 'compact', 'bypass-cache', 'concurrency'])

/** Whether `serve` reads this lookup flag from the environment (per-request and output flags it does not). */
export function serveReads(flag: string): boolean {
  return !NOT_FOR_SERVE.has(flag)
}

/** Conventional names read after the riskcheck one (PaaS platforms set PORT). */
const ALIASES: Readonly<Record<string, string>> = { host: 'HOST', port: 'PORT', 'database-url': 'DATABASE_URL', 'redis-url': 'REDIS_URL' }

/** The Redis key prefix of `--redis-prefix` (default `riskcheck`); a UsageError when it is not a plain name. */
export function redisPrefixOf(values: Record<string, unknown>): string {
  const prefix = (values['redis-prefix'] as string | undefined) ?? 'riskcheck'
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(prefix)) throw new UsageError(`--redis-prefix must be 1–64 letters, digits, _ . or - (got ${JSON.stringify(prefix.slice(0, 80))})`)
  return prefix
}

/**
 * The rechecks of `--recheck-delays 5m,15m,60m` / `--no-recheck`: the delays (ms) of the attempts after a deferred
 * email answer, false when off, undefined for the defaults. A UsageError for anything but 1 to 10 ascending durations.
 */
export function recheckOf(values: Record<string, unknown>): { delaysMs: number[] } | false | undefined {
  const text = values['recheck-delays'] as string | undefined
  if (values['no-recheck'] === true) {
    if (text !== undefined) throw new UsageError('--recheck-delays and --no-recheck cannot be used together')
    return false
  }
  if (text === undefined) return undefined
  const delaysMs = text.split(',').map((d) => parseDuration(d.trim()))
  const ok = delaysMs.length >= 1 && delaysMs.length <= 10 && delaysMs.every((d, i) => d !== null && (i === 0 || d >= delaysMs[i - 1]!))
  if (!ok) throw new UsageError(`--recheck-delays must be 1–10 ascending durations, comma-separated, e.g. 5m,15m,60m (got ${JSON.stringify(text.slice(0, 60))})`)
  return { delaysMs: delaysMs as number[] }
}

/** BullMQ's own default lock of a queue job (30 s). */
export const DEFAULT_QUEUE_LOCK_MS = 30_000

/**
 * The queue lock of `--queue-lock-timeout` (default 30s) in ms: how long a worker holds a bulk job or a delivery
 * without renewing its lock (it renews every half of it) before another worker may take the job over, and how often
 * workers look for such stalled jobs. A shorter lock hands a dead worker's work on sooner; too short a lock for a
 * worker whose event loop is busy makes it lose jobs it still runs (another worker then resumes them). A UsageError
 * below 1s.
 */
export function queueLockOf(values: Record<string, unknown>): number {
  const text = values['queue-lock-timeout'] as string | undefined
  if (text === undefined) return DEFAULT_QUEUE_LOCK_MS
  const ms = parseDuration(text)
  if (ms === null || ms < 1000) throw new UsageError(`--queue-lock-timeout must be a duration of at least 1s, e.g. 30s or 5s (got ${JSON.stringify(text.slice(0, 40))})`)
  return ms
}

/**
 * The bound of `--database-timeout` (default 5s) in ms: how long the PostgreSQL pool waits for a connection and for
 * each statement before the request gets its 503 (a database that hangs rather than refuses). A UsageError below
 * 100ms or above 10m.
 */
export function databaseTimeoutOf(values: Record<string, unknown>): number | undefined {
  const text = values['database-timeout'] as string | undefined
  if (text === undefined) return undefined
  const ms = parseDuration(text)
  if (ms === null || ms < 100 || ms > 600_000) throw new UsageError(`--database-timeout must be a duration from 100ms to 10m, e.g. 5s (got ${JSON.stringify(text.slice(0, 40))})`)
  return ms
}

/** What `--trust-proxy` gives Fastify's `trustProxy`: every hop, a number of hops, or addresses and ranges. */
export type TrustProxy = true | number | string[]

/** proxy-addr's names of address ranges, accepted in a `--trust-proxy` list. */
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** Why `item` is not an address, a CIDR range or a range name, or null when it is one. */
function proxyAddressProblem(item: string): string | null {
  if (PROXY_RANGES.has(item)) return null
  const slash = item.indexOf('/')
  const address = slash < 0 ? item : item.slice(0, slash)
  const family = isIP(address)
  if (family === 0) return `${JSON.stringify(item.slice(0, 60))} is not an IP address, a CIDR range or loopback/linklocal/uniquelocal`
  if (slash < 0) return null
  const bits = item.slice(slash + 1)
  const max = family === 4 ? 32 : 128
  return /^[0-9]{1,3}$/.test(bits) && Number(bits) <= max ? null : `${JSON.stringify(item.slice(0, 60))} has a prefix length that is not 0–${max}`
}

/**
 * The proxies `--trust-proxy` trusts (docs/dashboard.md, docs/deployment.md), or undefined for none (the
 * default, and `false`/`0`): `true` trusts every hop (only when nothing but the proxy can reach the server), a
 * number N the N hops nearest the server, and a comma-separated list of addresses, CIDR ranges or
 * loopback/linklocal/uniquelocal the hops with those addresses. A trusted hop's X-Forwarded-For gives the client
 * address (rate limits, sign-in limits) and its X-Forwarded-Proto the scheme (the session cookie is Secure over
 * https); an untrusted hop's are ignored. Links in mails never follow any of them: they come from --public-url
 * (src/server/public-url.ts). A UsageError for anything else.
 */
export function trustProxyOf(values: Record<string, unknown>): TrustProxy | undefined {
  const text = (values['trust-proxy'] as string | undefined)?.trim()
  if (text === undefined || text === '' || text === 'false' || text === '0') return undefined
  if (text === 'true') return true
  if (/^[0-9]+$/.test(text)) {
    const hops = Number(text)
    if (hops > 32) throw new UsageError(`--trust-proxy hop count must be 1–32 (got ${text})`)
    return hops
  }
  const items = text.split(',').map((s) => s.trim())
  for (const item of items) {
    const problem = proxyAddressProblem(item)
    if (problem) throw new UsageError(`--trust-proxy must be true, a hop count or comma-separated addresses/CIDR ranges: ${problem}`)
  }
  return items
}

/**
 * Fastify's `trustProxy` for a {@link TrustProxy}. A hop count becomes "the N hops nearest the server" (Fastify itself
 * refuses a bare number, since the nearest hop is then trusted whatever its address), so like `true` it is for a
 * server that only the proxies can reach.
 */
export function fastifyTrustProxy(t: TrustProxy): true | string[] | ((address: string, hop: number) => boolean) {
  return typeof t === 'number' ? (_address, hop) => hop < t : t
}

/** The environment variable of a flag: `--dns-server` → `RISKCHECK_DNS_SERVER`. */
export function envNameOf(flag: string): string {
  return `RISKCHECK_${flag.toUpperCase().replace(/-/g, '_')}`
}

/** A flag read from the environment: its variable names (first non-empty wins) and how the value is read. */
export interface Variable {
  flag: string
  names: readonly string[]
  type: 'string' | 'boolean'
  multiple: boolean
}

/** Every flag `serve` reads from the environment, with its variable names (first wins). */
export function serveEnvironment(): Variable[] {
  const all: Options = { ...SERVE_FLAGS, ...GLOBAL_FLAGS }
  return Object.entries(all)
    .filter(([flag]) => serveReads(flag))
    .map(([flag, def]) => ({
      flag,
      names: [envNameOf(flag), ...(ALIASES[flag] ? [ALIASES[flag]] : [])],
      type: def.type,
      multiple: def.multiple === true,
    }))
}

function parseBoolean(name: string, value: string): boolean {
  const v = value.trim().toLowerCase()
  if (['1', 'true', 'yes', 'on'].includes(v)) return true
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false
  throw new UsageError(`${name} must be 1/true/yes/on or 0/false/no/off (got ${JSON.stringify(value.slice(0, 40))})`)
}

/**
 * Merges the environment under the parsed flags: a flag given on the command line wins; otherwise the first
 * non-empty variable of its names applies. Returns the merged values and, per flag, where its value came from
 * (`--port` or `RISKCHECK_PORT`), for messages. `variables` defaults to serve's; `riskcheck worker` and
 * `riskcheck admin` pass the few they read.
 */
export function withEnvironment(
  flags: Record<string, unknown>,
  env: Record<string, string | undefined>,
  variables: readonly Variable[] = serveEnvironment(),
): { values: Record<string, unknown>; origin: (flag: string) => string } {
  const values = { ...flags }
  const from = new Map<string, string>()
  for (const { flag, names, type, multiple } of variables) {
    if (values[flag] !== undefined) continue
    const name = names.find((n) => (env[n] ?? '').trim() !== '')
    if (name === undefined) continue
    const raw = env[name]!
    from.set(flag, name)
    if (type === 'boolean') values[flag] = parseBoolean(name, raw)
    else if (multiple) values[flag] = raw.split(/[\s,]+/).filter((s) => s !== '')
    else values[flag] = raw.trim()
  }
  return { values, origin: (flag) => from.get(flag) ?? `--${flag}` }
}
