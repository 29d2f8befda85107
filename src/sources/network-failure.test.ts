import { describe, expect, it } from 'vitest'
import { httpFailureOf, isUnreachable, networkFailureOf } from './network-failure.js'

/** What undici's fetch rejects with: `TypeError: fetch failed` whose cause is the socket or DNS error. */
const fetchFailed = (cause: unknown) => Object.assign(new TypeError('fetch failed'), { cause })
const sysError = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(`${code} x`), { code, ...extra })

describe('networkFailureOf', () => {
  it('names DNS failures, refusals, unreachable networks, resets, TLS and timeouts with the host', () => {
    const url = 'https://data.iana.org/rdap/dns.json'
    expect(networkFailureOf(fetchFailed(sysError('ENOTFOUND', { hostname: 'data.iana.org' })), url)).toMatchObject({ kind: 'dns', code: 'ENOTFOUND', message: 'DNS lookup of data.iana.org failed (ENOTFOUND)' })
    expect(networkFailureOf(fetchFailed(sysError('EAI_AGAIN')), url).kind).toBe('dns')
    const refusedTwice = Object.assign(new AggregateError([sysError('ECONNREFUSED'), sysError('ECONNREFUSED')]), {})
    expect(networkFailureOf(fetchFailed(refusedTwice), 'http://127.0.0.1:9/x')).toMatchObject({ kind: 'refused', message: 'connection to 127.0.0.1:9 refused (ECONNREFUSED)' })
    expect(networkFailureOf(fetchFailed(sysError('ENETUNREACH')), url)).toMatchObject({ kind: 'unreachable', message: 'data.iana.org is unreachable (ENETUNREACH)' })
    expect(networkFailureOf(fetchFailed(sysError('UND_ERR_SOCKET')), url).kind).toBe('reset')
    expect(networkFailureOf(fetchFailed(sysError('CERT_HAS_EXPIRED')), url)).toMatchObject({ kind: 'tls', message: 'TLS with data.iana.org failed (CERT_HAS_EXPIRED)' })
    const timeout = Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' })
    expect(networkFailureOf(timeout, url, 5000)).toMatchObject({ kind: 'timeout', message: 'data.iana.org timed out after 5 s' })
    expect(networkFailureOf(new Error('boom'), url)).toMatchObject({ kind: 'other', message: 'data.iana.org: boom' })
  })

  it('says which failures cannot be helped by asking again at once', () => {
    expect(isUnreachable(networkFailureOf(fetchFailed(sysError('ENOTFOUND')), 'https://a.example/'))).toBe(true)
    expect(isUnreachable(networkFailureOf(fetchFailed(sysError('ECONNREFUSED')), 'https://a.example/'))).toBe(true)
    expect(isUnreachable(networkFailureOf(fetchFailed(sysError('ECONNRESET')), 'https://a.example/'))).toBe(false)
    expect(isUnreachable(httpFailureOf(503, 'https://a.example/x'))).toBe(false)
    expect(httpFailureOf(503, 'https://rdap.example:8443/x').message).toBe('rdap.example:8443 answered HTTP 503')
  })
})
