/**
 * Idempotency-Key when the client gives up: a client that times out and disconnects while its lookup still runs,
 * then retries with the same key, must get the first answer (or a 409 while it still runs) — never a second run and
 * a second charge.
 */
import net from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import type { ResultCache } from '../src/cache.js'
import { createServer, type RiskcheckServer } from '../src/server/app.js'
import { issueApiKey } from '../src/accounts/keys.js'

/** A result cache that never hits and answers each read after `delayMs`: it makes every lookup slow. */
const slowCache = (delayMs: number): ResultCache => ({
  get: async () => {
    await sleep(delayMs)
    return undefined
  },
  set() {},
})

let app: RiskcheckServer | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

describe('Idempotency-Key and an aborted request', () => {
  it('a retry after the client disconnected replays the first answer; the lookup is charged once', async () => {
    app = createServer({ db: ':memory:', purgeIntervalMs: 0, webhookIntervalMs: 0, riskcheck: { offline: true, cache: slowCache(300) } })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const now = Date.now()
    const org = await app.store.createOrg({ name: 'Acme', planId: 'starter' }, now)
    const { secret } = await issueApiKey(app.store, { orgId: org.id }, now)
    const before = (await app.store.getOrg(org.id, now))!
    const balanceBefore = before.subscriptionCredits + before.purchasedCredits
    const body = JSON.stringify({ ip: '8.8.8.8' })
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'idempotency-key': 'retry-after-timeout' }

    // The client sends the request and hangs up after 50 ms (its timeout), while the lookup still runs.
    const port = (app.server.address() as net.AddressInfo).port
    const socket = net.connect(port, '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write(
      `POST /v1/ip HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    await sleep(50)
    socket.destroy()
    // The client retries as a client should: on 409 (the first run is still going) after Retry-After, until answered.
    let retry = await app.inject({ method: 'POST', url: '/v1/ip', headers, payload: body })
    for (let tries = 0; retry.statusCode === 409 && tries < 50; tries++) {
      expect(retry.json().error.code).toBe('IDEMPOTENCY_CONFLICT')
      await sleep(200)
      retry = await app.inject({ method: 'POST', url: '/v1/ip', headers, payload: body })
    }
    expect(retry.statusCode).toBe(200)
    expect(retry.headers['idempotent-replayed']).toBe('true')
    const after = (await app.store.getOrg(org.id, Date.now()))!
    expect(balanceBefore - (after.subscriptionCredits + after.purchasedCredits)).toBe(1)
  })
})
