/**
 * One answer per value, whichever front door asks: the library, the HTTP API and the CLI give the same answer (the
 * same verdict and factors, or the same error code) for the same edge-case inputs — `{"email": ""}` included.
 */
import { PassThrough, Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHECKS, type SingleLookupType } from '../src/checks/registry.js'
import { runCli } from '../src/cli/main.js'
import { isRiskcheckError } from '../src/errors.js'
import { createRiskcheck, type Riskcheck } from '../src/riskcheck.js'
import { startTestServer, type TestServer } from './server-helpers.js'

type Answer = { result: string } | { error: string }

const EDGE = ['', ' ', '\t', 'x', 'x'.repeat(41), 'x'.repeat(65), `${'a'.repeat(3000)}@example.com`, '😀@example.com', 'null', '+1 999 555 0100', '192.0.2.1', 'localhost']

const ROUTE: Record<SingleLookupType, { url: string; field: string }> = {
  email: { url: '/v1/email', field: 'email' },
  phone: { url: '/v1/phone', field: 'phone' },
  phone_type: { url: '/v1/phone/type', field: 'phone' },
  ip: { url: '/v1/ip', field: 'ip' },
  domain_age: { url: '/v1/domain/age', field: 'domain' },
  email_auth: { url: '/v1/domain/email-auth', field: 'domain' },
}

const NOW = '2026-11-22T00:00:00Z'
let rc: Riskcheck
let s: TestServer

beforeAll(async () => {
  rc = createRiskcheck({ mode: 'test', now: () => new Date(NOW) })
  s = await startTestServer({ start: NOW })
})
afterAll(async () => {
  await rc.close()
  await s.close()
})

const fromResult = (r: { verdict: { status: string }; risk: { factors: string[] } }): Answer => ({ result: `${r.verdict.status} ${r.risk.factors.join(',')}` })

async function library(type: SingleLookupType, input: string): Promise<Answer> {
  try {
    return fromResult(await rc.lookup(type, input))
  } catch (e) {
    return { error: isRiskcheckError(e) ? e.code : String(e) }
  }
}

async function http(type: SingleLookupType, input: string): Promise<Answer> {
  s.tick()
  const r = await s.post(ROUTE[type].url, { [ROUTE[type].field]: input }, s.test)
  return r.status === 200 ? fromResult(r.body.data) : { error: r.body.error.code }
}

async function cli(type: SingleLookupType, input: string): Promise<Answer> {
  const stdout = new PassThrough()
  let out = ''
  stdout.on('data', (d) => (out += d))
  const code = await runCli([CHECKS[type].cli.command, input, '--mode', 'test', '--now', NOW, '--compact'], {
    stdin: Readable.from([]),
    stdout,
    stderr: new PassThrough(),
  })
  const body = JSON.parse(out)
  if (code === 0) return fromResult(body)
  expect(code, out).toBe(2)
  return { error: body.error.code }
}

describe('the same value gets the same answer from the library, the HTTP API and the CLI', () => {
  for (const type of Object.keys(ROUTE) as SingleLookupType[]) {
    it(type, async () => {
      for (const input of EDGE) {
        const expected = await library(type, input)
        expect(await http(type, input), `HTTP ${type} ${JSON.stringify(input.slice(0, 20))}`).toEqual(expected)
        expect(await cli(type, input), `CLI ${type} ${JSON.stringify(input.slice(0, 20))}`).toEqual(expected)
      }
    })
  }

  it('{"email": ""} is a result with verdict invalid everywhere', async () => {
    expect(await library('email', '')).toEqual({ result: 'invalid email_invalid_syntax' })
    expect(await http('email', '')).toEqual({ result: 'invalid email_invalid_syntax' })
    expect(await cli('email', '')).toEqual({ result: 'invalid email_invalid_syntax' })
  })
})
