/**
 * A {@link PhoneCarrierSource} over Twilio Lookup v2 Line Type Intelligence
 * (`GET {baseUrl}/v2/PhoneNumbers/{E.164}?Fields=line_type_intelligence`, HTTP Basic auth): line type, carrier name and
 * type, and MCC/MNC of mobiles. What stays null, how Twilio's types map and what Canadian numbers need:
 * docs/decisions.md, "Phone checks" → "live carrier source (Twilio)".
 */
import type { LineType } from '../../schema.js'
import { PhoneCarrierError, type CarrierLookupOptions, type LiveCarrierRecord, type PhoneCarrierSource } from './carrier-source.js'

/** Twilio's Line Type Intelligence `type` values and their line type. */
export const TWILIO_LINE_TYPES: Readonly<Record<string, LineType>> = Object.freeze({
  mobile: 'mobile',
  landline: 'landline',
  fixedVoip: 'voip',
  nonFixedVoip: 'voip',
  personal: 'voip',
  tollFree: 'toll_free',
  premium: 'premium',
  sharedCost: 'premium',
  uan: 'unknown',
  voicemail: 'unknown',
  pager: 'unknown',
  unknown: 'unknown',
})

/** Options of {@link createTwilioCarrierSource}. */
export interface TwilioCarrierSourceOptions {
  /** Account SID (or an API key SID) — the Basic-auth user name. */
  accountSid: string
  /** Auth token (or the API key secret) — the Basic-auth password. */
  authToken: string
  /** Default `https://lookups.twilio.com`; tests point it at a loopback server. */
  baseUrl?: string
  /** The fetch to use (default: global fetch). */
  fetch?: typeof fetch
  /** Per-request timeout in ms (default 5000); the phone source's own deadline also applies. */
  timeoutMs?: number
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)

/**
 * Creates the Twilio Lookup v2 carrier source. Throws a TypeError for missing credentials or a bad base URL.
 *
 * @example
 * const rc = createRiskcheck({
 *   phone: { carrierSource: createTwilioCarrierSource({ accountSid: process.env.TWILIO_SID!, authToken: process.env.TWILIO_TOKEN! }) },
 * })
 */
export function createTwilioCarrierSource(options: TwilioCarrierSourceOptions): PhoneCarrierSource {
  const { accountSid, authToken } = options ?? ({} as TwilioCarrierSourceOptions)
  if (typeof accountSid !== 'string' || accountSid === '') throw new TypeError('createTwilioCarrierSource: accountSid is required')
  if (typeof authToken !== 'string' || authToken === '') throw new TypeError('createTwilioCarrierSource: authToken is required')
  const base = options.baseUrl ?? 'https://lookups.twilio.com'
  let baseUrl: URL
  try {
    baseUrl = new URL(base)
  } catch {
    throw new TypeError(`createTwilioCarrierSource: baseUrl ${JSON.stringify(base)} is not an absolute URL`)
  }
  const doFetch = options.fetch ?? globalThis.fetch
  if (typeof doFetch !== 'function') throw new TypeError('createTwilioCarrierSource: no fetch available')
  const ownTimeout = options.timeoutMs ?? 5000
  const authorization = 'Basic ' + Buffer.from(`${accountSid}:${authToken}`).toString('base64')

  return {
    name: 'twilio',
    async lookup(e164: string, opts: CarrierLookupOptions): Promise<LiveCarrierRecord> {
      const url = new URL(`v2/PhoneNumbers/${encodeURIComponent(e164)}`, baseUrl.href.endsWith('/') ? baseUrl : baseUrl.href + '/')
      url.searchParams.set('Fields', 'line_type_intelligence')
      const timeoutMs = Math.min(ownTimeout, opts.timeoutMs)
      const timeout = AbortSignal.timeout(timeoutMs)
      const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout
      let res: Response
      let text: string
      try {
        res = await doFetch(url, { method: 'GET', headers: { authorization, accept: 'application/json' }, signal, redirect: 'error' })
        text = await res.text()
      } catch (e) {
        if (signal.aborted) throw new PhoneCarrierError('timeout', `Twilio Lookup did not answer within ${timeoutMs} ms`, { cause: e })
        throw new PhoneCarrierError('network', `Twilio Lookup request failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e })
      }
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        body = undefined
      }
      const obj = (typeof body === 'object' && body !== null ? body : null) as Record<string, unknown> | null
      if (!res.ok) {
        const code = obj && (typeof obj.code === 'number' || typeof obj.code === 'string') ? String(obj.code) : undefined
        const message = obj ? str(obj.message) : null
        throw new PhoneCarrierError('http', `Twilio Lookup answered HTTP ${res.status}${code ? ` (error ${code})` : ''}${message ? `: ${message}` : ''}`, {
          status: res.status,
          ...(code ? { providerCode: code } : {}),
        })
      }
      if (!obj) throw new PhoneCarrierError('malformed', 'Twilio Lookup answered with a body that is not a JSON object', { status: res.status })
      const lti = obj.line_type_intelligence
      if (typeof lti !== 'object' || lti === null)
        throw new PhoneCarrierError('malformed', 'Twilio Lookup answer has no line_type_intelligence object', { status: res.status })
      const l = lti as Record<string, unknown>
      if (l.error_code !== null && l.error_code !== undefined) {
        const code = String(l.error_code)
        throw new PhoneCarrierError('rejected', `Twilio Line Type Intelligence error ${code}`, { status: res.status, providerCode: code })
      }
      const rawType = str(l.type)
      const lineType = rawType === null ? null : Object.hasOwn(TWILIO_LINE_TYPES, rawType) ? TWILIO_LINE_TYPES[rawType]! : 'unknown'
      return {
        lineType,
        carrierType: rawType,
        carrierName: str(l.carrier_name),
        ocn: null,
        mcc: str(l.mobile_country_code),
        mnc: str(l.mobile_network_code),
        ported: null,
        originalCarrier: null,
        lrn: null,
        lata: null,
        rateCenter: null,
      }
    },
  }
}
