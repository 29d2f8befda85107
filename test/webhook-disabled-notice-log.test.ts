/**
 * An endpoint auto-disabled after a day of failures: the server's log line says which endpoint of which org, but not
 * its URL — a Slack or Discord incoming-webhook URL carries its token in the path, others a token in the query, and
 * the log keeps no credential (as the delivery log lines omit the URL). The stored notice, which the team's owners
 * and admins are mailed, still names the URL. Before, the log line repeated the notice with the URL in it.
 */
import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { createServer } from '../src/server/app.js'
import { fakeClock } from './clock.js'

const SLACK_TOKEN = 'Zq8xW3vN5tR7yU1iO9pA2sD4'
const URL_TOKEN = 'qs-credential-6f1c'

describe('the notice of an auto-disabled endpoint in the log', () => {
  it('names the endpoint and org, not the URL and its token', async () => {
    const clock = fakeClock('2026-11-22T00:00:00Z')
    const lines: string[] = []
    const app = createServer({
      db: ':memory:',
      purgeIntervalMs: 0,
      webhookIntervalMs: 0,
      riskcheck: { offline: true, now: clock.now },
      // every delivery fails: no request leaves the process
      webhookDeliver: async () => ({ ok: false, status: 500, durationMs: 1, responseBody: '', error: 'http_status', errorDetail: 'HTTP 500', address: null }),
      logger: { level: 'info', stream: new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }) },
    })
    try {
      await app.ready()
      const t0 = clock.now().getTime()
      const org = await app.store.createOrg({ name: 'Acme', planId: 'free' }, t0)
      const key = (await issueApiKey(app.store, { orgId: org.id, mode: 'live', scopes: ['webhooks'] }, t0)).secret
      const ids: string[] = []
      for (const url of [`https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/${SLACK_TOKEN}`, `https://hooks.example.org/in?token=${URL_TOKEN}`]) {
        const r = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify({ url, events: ['*'] }) })
        expect(r.statusCode).toBe(201)
        ids.push(JSON.parse(r.body).data.id)
      }
      await app.store.addCredits(org.id, 5, 'top_up', t0)
      // the first attempt and the 10 retries, the last 23 h 51 min after the first
      for (let i = 0; i < 11; i++) {
        await app.webhooks!.runOnce()
        clock.advance(7 * 3600_000)
      }
      const notices = await app.webhooks!.deliveries.listNotices()
      expect(notices.map((n) => n.subject).sort()).toEqual([...ids].sort())
      expect(notices.map((n) => n.message).join('\n')).toContain(SLACK_TOKEN) // the team is told which URL
      const log = lines.join('')
      for (const id of ids) expect(log).toContain(`Webhook endpoint ${id} of org ${org.id} was disabled`)
      expect(log).not.toContain(SLACK_TOKEN)
      expect(log).not.toContain(URL_TOKEN)
    } finally {
      await app.close()
    }
  })
})
