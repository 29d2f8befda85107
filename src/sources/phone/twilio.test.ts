import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PhoneCarrierError, lookupCarrierSafely } from './carrier-source.js'
import { TWILIO_LINE_TYPES, createTwilioCarrierSource } from './twilio.js'

/** A Lookup v2 answer in Twilio's documented JSON shape (line_type_intelligence requested). */
function twilioBody(e164: string, lti: Record<string, unknown>) {
  return {
    calling_country_code: '1',
    country_code: 'US',
    phone_number: e164,
    national_format: '(201) 555-0123',
    valid: true,
    validation_errors: [],
    caller_name: null,
    sim_swap: null,
    call_forwarding: null,
    line_status: null,
    line_type_intelligence: lti,
    identity_match: null,
    reassigned_number: null,
    sms_pumping_risk: null,
    phone_number_quality_score: null,
    pre_fill: null,
    url: `https://lookups.twilio.com/v2/PhoneNumbers/${e164}`,
  }
}

interface Seen {
  url: string
  authorization: string | undefined
}

type Handler = (req: IncomingMessage, res: ServerResponse, e164: string) => void

const handlers: Record<string, Handler> = {
  // +1 201 555 0100 … 0199: one behaviour per number
  '+12015550100': (_q, res, n) =>
    json(res, 200, twilioBody(n, { error_code: null, mobile_country_code: '310', mobile_network_code: '260', carrier_name: 'T-Mobile USA, Inc.', type: 'mobile' })),
  '+12015550101': (_q, res, n) =>
    json(res, 200, twilioBody(n, { error_code: null, mobile_country_code: null, mobile_network_code: null, carrier_name: 'Verizon', type: 'landline' })),
  '+12015550102': (_q, res, n) =>
    json(res, 200, twilioBody(n, { error_code: null, mobile_country_code: '313', mobile_network_code: '981', carrier_name: 'Bandwidth/13 - Bandwidth.com - SVR', type: 'nonFixedVoip' })),
  '+12015550103': (_q, res, n) =>
    json(res, 200, twilioBody(n, { error_code: null, mobile_country_code: null, mobile_network_code: null, carrier_name: null, type: 'tollFree' })),
  '+12015550104': (_q, res, n) =>
    json(res, 200, twilioBody(n, { error_code: null, mobile_country_code: null, mobile_network_code: null, carrier_name: null, type: 'somethingNew' })),
  '+12015550110': () => {
    /* never answers: timeout */
  },
  '+12015550111': (_q, res) =>
    json(res, 404, { code: 20404, message: 'The requested resource /PhoneNumbers/+12015550111 was not found', more_info: 'https://www.twilio.com/docs/errors/20404', status: 404 }),
  '+12015550112': (_q, res) =>
    json(res, 500, { code: 20500, message: 'An internal server error has occurred', more_info: 'https://www.twilio.com/docs/errors/20500', status: 500 }),
  '+12015550113': (_q, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"line_type_intelligence": {"type": "mob')
  },
  '+12015550114': (_q, res, n) => json(res, 200, { phone_number: n, valid: true, line_type_intelligence: null }),
  '+16135550115': (_q, res, n) =>
    json(res, 200, twilioBody(n, { error_code: 60601, mobile_country_code: null, mobile_network_code: null, carrier_name: null, type: null })),
  '+12015550116': (_q, res) => {
    res.writeHead(502, { 'content-type': 'text/html' })
    res.end('<html>Bad Gateway</html>')
  },
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

let server: Server
let baseUrl: string
const seen: Seen[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization })
    const url = new URL(req.url ?? '/', 'http://x')
    const m = /^\/v2\/PhoneNumbers\/([^/]+)$/.exec(url.pathname)
    const e164 = m ? decodeURIComponent(m[1]!) : ''
    const h = handlers[e164]
    if (!h || url.searchParams.get('Fields') !== 'line_type_intelligence') return json(res, 400, { code: 20001, message: 'bad request', status: 400 })
    h(req, res, e164)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((r) => server.close(() => r()))
})

const source = () => createTwilioCarrierSource({ accountSid: 'ACtest', authToken: 'secret', baseUrl })

describe('createTwilioCarrierSource against a loopback Twilio Lookup v2', () => {
  it('maps a mobile answer and sends Basic auth to GET /v2/PhoneNumbers/{e164}?Fields=line_type_intelligence', async () => {
    seen.length = 0
    const r = await source().lookup('+12015550100', { timeoutMs: 2000 })
    expect(r).toEqual({
      lineType: 'mobile',
      carrierType: 'mobile',
      carrierName: 'T-Mobile USA, Inc.',
      ocn: null,
      mcc: '310',
      mnc: '260',
      ported: null,
      originalCarrier: null,
      lrn: null,
      lata: null,
      rateCenter: null,
    })
    expect(seen).toHaveLength(1)
    expect(seen[0]!.url).toBe('/v2/PhoneNumbers/%2B12015550100?Fields=line_type_intelligence')
    expect(seen[0]!.authorization).toBe('Basic ' + Buffer.from('ACtest:secret').toString('base64'))
  })

  it('maps landline, nonFixedVoip, tollFree and unknown new types', async () => {
    const s = source()
    expect(await s.lookup('+12015550101', { timeoutMs: 2000 })).toMatchObject({ lineType: 'landline', carrierName: 'Verizon', mcc: null })
    expect(await s.lookup('+12015550102', { timeoutMs: 2000 })).toMatchObject({ lineType: 'voip', carrierType: 'nonFixedVoip', mnc: '981' })
    expect(await s.lookup('+12015550103', { timeoutMs: 2000 })).toMatchObject({ lineType: 'toll_free', carrierName: null })
    expect(await s.lookup('+12015550104', { timeoutMs: 2000 })).toMatchObject({ lineType: 'unknown', carrierType: 'somethingNew' })
  })

  it('maps every documented Twilio type', () => {
    expect(TWILIO_LINE_TYPES).toEqual({
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
  })

  it('times out a server that never answers', async () => {
    const err = await source()
      .lookup('+12015550110', { timeoutMs: 150 })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(PhoneCarrierError)
    expect((err as PhoneCarrierError).kind).toBe('timeout')
  })

  it('turns 4xx and 5xx answers into http errors with Twilio’s code', async () => {
    const s = source()
    const e404 = (await s.lookup('+12015550111', { timeoutMs: 2000 }).catch((e: unknown) => e)) as PhoneCarrierError
    expect(e404).toMatchObject({ kind: 'http', status: 404, providerCode: '20404' })
    expect(e404.message).toMatch(/HTTP 404 \(error 20404\)/)
    const e500 = (await s.lookup('+12015550112', { timeoutMs: 2000 }).catch((e: unknown) => e)) as PhoneCarrierError
    expect(e500).toMatchObject({ kind: 'http', status: 500, providerCode: '20500' })
    const e502 = (await s.lookup('+12015550116', { timeoutMs: 2000 }).catch((e: unknown) => e)) as PhoneCarrierError
    expect(e502).toMatchObject({ kind: 'http', status: 502, providerCode: undefined })
  })

  it('rejects malformed JSON and answers without line_type_intelligence', async () => {
    const s = source()
    expect(await s.lookup('+12015550113', { timeoutMs: 2000 }).catch((e: PhoneCarrierError) => e.kind)).toBe('malformed')
    expect(await s.lookup('+12015550114', { timeoutMs: 2000 }).catch((e: PhoneCarrierError) => e.kind)).toBe('malformed')
  })

  it('treats a line_type_intelligence error_code (60601: Canada without NPAC approval) as rejected', async () => {
    const e = (await source().lookup('+16135550115', { timeoutMs: 2000 }).catch((x: unknown) => x)) as PhoneCarrierError
    expect(e).toMatchObject({ kind: 'rejected', providerCode: '60601' })
  })

  it('reports a refused connection as a network error', async () => {
    const closed = createServer()
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((r) => closed.close(() => r()))
    const s = createTwilioCarrierSource({ accountSid: 'a', authToken: 'b', baseUrl: `http://127.0.0.1:${port}` })
    expect(await s.lookup('+12015550100', { timeoutMs: 2000 }).catch((e: PhoneCarrierError) => e.kind)).toBe('network')
  })

  it('works through lookupCarrierSafely: success, timeout and error outcomes, never a rejection', async () => {
    const s = source()
    const ok = await lookupCarrierSafely(s, '+12015550102', 2000)
    expect(ok).toMatchObject({ ok: true, source: 'twilio', record: { lineType: 'voip' } })
    const slow = await lookupCarrierSafely(s, '+12015550110', 100)
    expect(slow).toMatchObject({ ok: false, source: 'twilio', failure: 'timeout' })
    const bad = await lookupCarrierSafely(s, '+12015550112', 2000)
    expect(bad).toMatchObject({ ok: false, failure: 'http' })
  })

  it('validates its options', () => {
    expect(() => createTwilioCarrierSource({ accountSid: '', authToken: 'x' })).toThrow(TypeError)
    expect(() => createTwilioCarrierSource({ accountSid: 'x', authToken: '' })).toThrow(TypeError)
    expect(() => createTwilioCarrierSource({ accountSid: 'x', authToken: 'y', baseUrl: 'not a url' })).toThrow(/absolute URL/)
  })
})
