import { describe, expect, it } from 'vitest'
import { REDACTED, redactingLoggerOptions, redactSecrets, redactUrl } from './log-redaction.js'

const KEY = 'svc_live_7hQ2mZ0aK1pB' + 'x'.repeat(40)
const SECRET = 'whsec_' + 'AbC-_9'.repeat(6)

describe('redactSecrets', () => {
  it('replaces keys, webhook secrets and bearer credentials wherever they appear', () => {
    expect(redactSecrets(`key=${KEY}&x=1`)).toBe(`key=svc_live_${REDACTED}&x=1`)
    expect(redactSecrets(`"${KEY.replace('live', 'test')}"`)).toBe(`"svc_test_${REDACTED}"`)
    expect(redactSecrets(`secret ${SECRET}.`)).toBe(`secret whsec_${REDACTED}.`)
    expect(redactSecrets('Authorization: Bearer abc.def-123')).toBe(`Authorization: Bearer ${REDACTED}`)
    expect(redactSecrets(`/v1/${KEY}/x`)).toBe(`/v1/svc_live_${REDACTED}/x`)
    expect(redactSecrets('nothing to hide: svc_ whsec bearer')).toBe('nothing to hide: svc_ whsec bearer')
  })
})

describe('redactUrl', () => {
  it('keeps the path and the parameter names, never a query value', () => {
    expect(redactUrl('/v1/ip')).toBe('/v1/ip')
    expect(redactUrl(`/v1/ip?api_key=${KEY}`)).toBe(`/v1/ip?api_key=${REDACTED}`)
    expect(redactUrl('/v1/bulk/jobs?limit=5&cursor=abc&flag')).toBe(`/v1/bulk/jobs?limit=${REDACTED}&cursor=${REDACTED}&flag=${REDACTED}`)
    expect(redactUrl(`/v1/ip?${KEY}`)).toBe(`/v1/ip?svc_live_${REDACTED}=${REDACTED}`)
  })
})

describe('redactingLoggerOptions', () => {
  it('is off when logging is off; wraps the destination otherwise', () => {
    expect(redactingLoggerOptions(undefined)).toBe(false)
    expect(redactingLoggerOptions(false)).toBe(false)
    const lines: string[] = []
    const options = redactingLoggerOptions({ level: 'warn', stream: { write: (s: string) => lines.push(s) } }) as { level: string; stream: { write(s: string): void } }
    expect(options.level).toBe('warn')
    options.stream.write(`{"msg":"${KEY}"}\n`)
    expect(lines).toEqual([`{"msg":"svc_live_${REDACTED}"}\n`])
  })
})
