/**
 * Sending one webhook delivery: {@link buildDelivery} makes the signed request for an event and an endpoint;
 * {@link deliverWebhook} POSTs it behind the SSRF guard and reports what happened, never throwing. The rules of a
 * delivery: docs/decisions.md, "Webhooks" → "sending a delivery".
 */
import http from 'node:http'
import https from 'node:https'
import type { LookupFunction, Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { StringDecoder } from 'node:string_decoder'
import type { EventPayload } from '../schema.js'
import { VERSION } from '../version.js'
import { buildFormattedBody, type WebhookFormat } from './format.js'
import { signWebhook } from './signature.js'
import { createGuardedLookup, getBlockedAddressReason, validateWebhookUrl, WebhookAddressBlockedError } from './ssrf.js'

/** The delivery reply time: 10 seconds (docs/service.md, webhooks). */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 10_000

/** How much of a response body is read and kept in the delivery log. */
export const DEFAULT_MAX_RESPONSE_BYTES = 4096

/** The User-Agent of deliveries. */
export const WEBHOOK_USER_AGENT = `riskcheck-webhooks/${VERSION}`

/** A delivery ready to send: the exact body that was signed and its headers. */
export interface BuiltDelivery {
  body: string
  headers: Record<string, string>
}

/** What {@link buildDelivery} needs of an endpoint: its CURRENT secret and its format. */
export interface DeliveryEndpoint {
  secret: string
  format: WebhookFormat
}

/**
 * Builds the request of one delivery attempt: the body in the endpoint's format and the headers `Content-Type`,
 * `User-Agent`, `SVC-Signature` (signed now with the endpoint's current secret over the exact body), `SVC-Event-Id`,
 * `SVC-Event-Type` and `SVC-Delivery-Id`. Call it at send time (not at enqueue time) so a rotated secret and a fresh
 * timestamp are used. Slack and Discord bodies are signed too (harmless to them).
 *
 * @example
 * const { body, headers } = buildDelivery(event, { secret: 'whsec_…', format: 'json' }, { deliveryId: 'dlv_1', now: new Date() })
 */
export function buildDelivery(
  event: EventPayload,
  endpoint: DeliveryEndpoint,
  options: { deliveryId: string; now: Date; userAgent?: string },
): BuiltDelivery {
  const body = buildFormattedBody(event, endpoint.format)
  const t = Math.floor(options.now.getTime() / 1000)
  return {
    body,
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': options.userAgent ?? WEBHOOK_USER_AGENT,
      'SVC-Signature': signWebhook(body, endpoint.secret, t),
      'SVC-Event-Id': event.id,
      'SVC-Event-Type': event.type,
      'SVC-Delivery-Id': options.deliveryId,
    },
  }
}

/** Why a delivery failed (closed vocabulary; `errorDetail` says more). */
export type DeliveryError =
  | 'invalid_url'
  | 'blocked_address'
  | 'dns'
  | 'connection'
  | 'tls'
  | 'timeout'
  | 'redirect'
  | 'http_status'
  | 'network'

/** The outcome of one delivery attempt. */
export interface DeliveryResult {
  /** a 2xx arrived within the timeout */
  ok: boolean
  /** the response status, or null when no response arrived */
  status: number | null
  /** from the start of the attempt to the end of reading the (bounded) response */
  durationMs: number
  /** the first `maxResponseBytes` bytes of the response body, UTF-8 decoded (a cut character is dropped) */
  responseBody: string
  /** null on success */
  error: DeliveryError | null
  /** a human sentence for the log, null on success */
  errorDetail: string | null
  /** the address actually connected to (when a connection was made) */
  address: string | null
}

/** Options of {@link deliverWebhook}. */
export interface DeliverWebhookOptions {
  url: string | URL
  /** the exact body that was signed */
  body: string
  headers: Record<string, string>
  /** total budget for connecting, sending and receiving the status line (default 10,000 ms) */
  timeoutMs?: number
  /** tests / local development only: permit 127.0.0.0/8 and ::1, and plain http:// to them */
  allowLoopback?: boolean
  /**
   * The resolver the SSRF guard wraps (default `dns.lookup`). Tests pass a fake name → address mapping. Whatever it
   * answers is checked.
   */
  lookup?: LookupFunction
  /** bytes of the response body kept (default 4,096); reading stops there */
  maxResponseBytes?: number
  /** extra trusted CA certificates (PEM) for https — tests with a self-signed receiver only */
  ca?: string | Buffer
  /** reuse connections between deliveries (default true) */
  keepAlive?: boolean
}

type AgentKind = 'http' | 'https'
const defaultAgents = new Map<string, http.Agent>()
const customAgents = new WeakMap<LookupFunction, Map<string, http.Agent>>()

function guardedAgent(kind: AgentKind, allowLoopback: boolean, lookup: LookupFunction | undefined): http.Agent {
  const key = `${kind}:${allowLoopback ? 'loopback' : 'public'}`
  let map = defaultAgents
  if (lookup) {
    let m = customAgents.get(lookup)
    if (!m) {
      m = new Map()
      customAgents.set(lookup, m)
    }
    map = m
  }
  let agent = map.get(key)
  if (!agent) {
    const guarded = createGuardedLookup({
      allowLoopback,
      loopbackOnly: kind === 'http',
      ...(lookup ? { lookup } : {}),
    })
    // Agent options override request options in Node's Agent, so this lookup is the one every socket uses.
    const options = { keepAlive: true, timeout: 4000, scheduling: 'lifo' as const, maxFreeSockets: 64, lookup: guarded }
    agent = kind === 'https' ? new https.Agent(options) : new http.Agent(options)
    map.set(key, agent)
  }
  return agent
}

function classifyError(err: unknown): { error: DeliveryError; detail: string } {
  if (err instanceof WebhookAddressBlockedError) return { error: 'blocked_address', detail: err.message }
  const e = err as { code?: unknown; message?: unknown }
  const code = typeof e?.code === 'string' ? e.code : ''
  const message = typeof e?.message === 'string' ? e.message : String(err)
  if (code === 'ERR_WEBHOOK_ADDRESS_BLOCKED') return { error: 'blocked_address', detail: message }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NODATA' || code === 'EAI_NONAME') {
    return { error: 'dns', detail: `DNS lookup failed (${code})` }
  }
  if (
    code.startsWith('ERR_TLS') ||
    code.startsWith('ERR_SSL') ||
    code.includes('CERT') ||
    code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' ||
    code === 'SELF_SIGNED_CERT_IN_CHAIN' ||
    code === 'DEPTH_ZERO_SELF_SIGNED_CERT' ||
    code === 'EPROTO'
  ) {
    return { error: 'tls', detail: `TLS failed (${code}): ${message}` }
  }
  if (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === 'EPIPE' ||
    code === 'ECONNABORTED' ||
    code === 'ETIMEDOUT'
  ) {
    return { error: 'connection', detail: `connection failed (${code})` }
  }
  return { error: 'network', detail: code ? `${code}: ${message}` : message }
}

const RETRYABLE_ON_REUSED = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED'])

/**
 * POSTs one delivery and reports the outcome; never throws (a failure is a result with `ok: false`). The URL is
 * validated again, every address DNS answers and the connected address checked; redirects are not followed; the body is
 * read up to `maxResponseBytes` within `timeoutMs` (docs/decisions.md, "Webhooks" → "sending a delivery").
 *
 * @example
 * const r = await deliverWebhook({ url: endpoint.url, ...buildDelivery(event, endpoint, { deliveryId, now }) })
 */
export async function deliverWebhook(options: DeliverWebhookOptions): Promise<DeliveryResult> {
  const started = performance.now()
  const allowLoopback = options.allowLoopback === true
  const timeoutMs = options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS
  const maxBytes = Math.max(0, Math.floor(options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES))
  const fail = (error: DeliveryError, detail: string, extra: Partial<DeliveryResult> = {}): DeliveryResult => ({
    ok: false,
    status: null,
    durationMs: Math.round(performance.now() - started),
    responseBody: '',
    error,
    errorDetail: detail,
    address: null,
    ...extra,
  })
  try {
    const checked = validateWebhookUrl(options.url, { allowLoopback })
    if (!checked.ok) {
      const blocked = checked.reason === 'address_not_public' || checked.reason === 'host_not_public'
      return fail(blocked ? 'blocked_address' : 'invalid_url', checked.message)
    }
    const url = checked.url
    const kind: AgentKind = url.protocol === 'https:' ? 'https' : 'http'
    const body = Buffer.from(String(options.body), 'utf8')
    const headers: Record<string, string | number> = { ...options.headers, 'Content-Length': body.length }
    const deadline = started + timeoutMs
    const guarded = createGuardedLookup({
      allowLoopback,
      loopbackOnly: kind === 'http',
      ...(options.lookup ? { lookup: options.lookup } : {}),
    })
    const agent: http.Agent | false = options.keepAlive === false ? false : guardedAgent(kind, allowLoopback, options.lookup)
    let attempt = await sendOnce(url, kind, body, headers, agent, guarded, options.ca, deadline, maxBytes, allowLoopback)
    if (attempt.kind === 'error' && attempt.reused && RETRYABLE_ON_REUSED.has(attempt.code) && performance.now() < deadline) {
      attempt = await sendOnce(url, kind, body, headers, agent, guarded, options.ca, deadline, maxBytes, allowLoopback)
    }
    const durationMs = Math.round(performance.now() - started)
    if (attempt.kind === 'timeout') return fail('timeout', `no response within ${timeoutMs} ms`, { durationMs, address: attempt.address })
    if (attempt.kind === 'error') {
      const c = classifyError(attempt.err)
      return fail(c.error, c.detail, { durationMs, address: attempt.address })
    }
    const { status, responseBody, address, location } = attempt
    if (status >= 200 && status < 300) {
      return { ok: true, status, durationMs, responseBody, error: null, errorDetail: null, address }
    }
    if (status >= 300 && status < 400) {
      const where = location ? ` to ${location.slice(0, 200)}` : ''
      return fail('redirect', `HTTP ${status}: redirect${where} not followed`, { status, durationMs, responseBody, address })
    }
    return fail('http_status', `HTTP ${status}`, { status, durationMs, responseBody, address })
  } catch (err) {
    const c = classifyError(err)
    return fail(c.error, c.detail)
  }
}

type SendOutcome =
  | { kind: 'response'; status: number; responseBody: string; address: string | null; location: string | null }
  | { kind: 'timeout'; address: string | null }
  | { kind: 'error'; err: unknown; code: string; reused: boolean; address: string | null }

function sendOnce(
  url: URL,
  kind: AgentKind,
  body: Buffer,
  headers: Record<string, string | number>,
  agent: http.Agent | false,
  lookup: LookupFunction,
  ca: string | Buffer | undefined,
  deadline: number,
  maxBytes: number,
  allowLoopback: boolean,
): Promise<SendOutcome> {
  return new Promise<SendOutcome>((resolve) => {
    let settled = false
    let address: string | null = null
    let reused = false
    let req: http.ClientRequest | undefined = undefined
    const finish = (o: SendOutcome): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(o)
    }
    const remaining = Math.max(0, deadline - performance.now())
    const timer = setTimeout(() => {
      finish({ kind: 'timeout', address })
      req?.destroy()
    }, remaining)

    const requestOptions: https.RequestOptions = {
      method: 'POST',
      headers,
      agent,
      lookup,
      maxHeaderSize: 16 * 1024,
      ...(ca !== undefined && kind === 'https' ? { ca } : {}),
    }
    try {
      req = (kind === 'https' ? https : http).request(url, requestOptions)
    } catch (err) {
      finish({ kind: 'error', err, code: codeOf(err), reused: false, address })
      return
    }
    const r = req
    r.on('socket', (socket: Socket) => {
      reused = r.reusedSocket
      const check = (): void => {
        address = socket.remoteAddress ?? null
        // Defence in depth: the lookup (names) and validateWebhookUrl (literals) already judged this address.
        const reason = address === null ? null : getBlockedAddressReason(address, { allowLoopback })
        if (reason !== null && address !== null) {
          r.destroy(new WebhookAddressBlockedError(url.hostname, [{ address, reason }]))
        }
      }
      if (socket.connecting) socket.once('connect', check)
      else check()
    })
    r.on('error', (err) => finish({ kind: 'error', err, code: codeOf(err), reused, address }))
    r.on('response', (res) => {
      const status = res.statusCode ?? 0
      const location = typeof res.headers.location === 'string' ? res.headers.location : null
      const decoder = new StringDecoder('utf8')
      let text = ''
      let bytes = 0
      const done = (): void => finish({ kind: 'response', status, responseBody: text, address, location })
      // After the status line has arrived the outcome is known; the deadline only stops the body read.
      clearTimeout(timer)
      const bodyTimer = setTimeout(
        () => {
          done()
          res.destroy()
        },
        Math.max(0, deadline - performance.now()),
      )
      const end = (): void => {
        clearTimeout(bodyTimer)
        done()
      }
      if (maxBytes === 0) {
        end()
        res.destroy()
        return
      }
      res.on('data', (chunk: Buffer) => {
        if (settled) return
        const take = Math.min(chunk.length, maxBytes - bytes)
        if (take > 0) {
          text += decoder.write(take === chunk.length ? chunk : chunk.subarray(0, take))
          bytes += take
        }
        if (bytes >= maxBytes) {
          end()
          res.destroy()
        }
      })
      res.on('end', end)
      res.on('error', end)
      res.on('close', end)
    })
    r.end(body)
  })
}

function codeOf(err: unknown): string {
  const c = (err as { code?: unknown } | null)?.code
  return typeof c === 'string' ? c : ''
}
