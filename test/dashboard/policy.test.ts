/**
 * The dashboard's Policy page over HTTP (memory, SQLite, and PostgreSQL with RISKCHECK_TEST_DATABASE_URL): the policy
 * in force, a malformed candidate refused with every error listed, a valid one backtested over the team's answers
 * labelled by its outcomes, a forged Apply refused, Apply → the team's next API answer uses it, Discard changes
 * nothing; a developer gets 403 and no Policy link.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../../src/accounts/keys.js'
import { engines, start, type Running } from './engines.js'
import { Client, pageText, send } from './http.js'

const BLOCK_DATACENTERS = 'description: Datacenters block\nrules:\n  - unusable_input_blocks\n  - { name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }\n'
const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')

describe.each(engines('dashboard policy'))('dashboard policy on %s', { concurrent: true }, (engine) => {
  let r: Running
  let c: Client
  let team = ''
  let key = ''
  beforeAll(async () => {
    r = await start(engine, { riskcheck: { offline: true } })
    c = new Client(r.base)
    team = await c.signUp('owner@example.test', 'Policy team')
    const orgId = team.split('/').pop()!
    key = (await issueApiKey(r.app.store, { orgId, name: 'k' }, r.clock.t)).secret
  }, 60_000)
  afterAll(async () => r?.close())

  // The engines side by side (each its own server, database, clock and mail box); on one engine, in order.
  describe('in order', { sequential: true }, () => {
    const api = async (path: string, body?: unknown) => {
      const once = () =>
        send(r.base, body === undefined ? 'GET' : 'POST', path, {
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
      let a = await once()
      // the plan allows 5 requests a second: a client that meets 429 waits as Retry-After says and sends it again
      for (let tries = 0; a.status === 429 && tries < 5; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 1000 * Number(a.headers['retry-after'] ?? 1)))
        a = await once()
      }
      expect(a.status, a.body).toBe(200)
      return JSON.parse(a.body).data
    }

    it('upload, see the backtest labelled by outcomes, apply → the next answer uses it; malformed files list their errors', async () => {
      // Answers: 8.8.8.8 (datacenter: verify) twice, 1.1.1.1 (approve); outcomes: the first 8.8.8.8 legitimate, 1.1.1.1
      // fraud (which later answers of 1.1.1.1 carry as reported_fraud_before; 8.8.8.8 stays verify under the default).
      const a = await api('/v1/ip', { ip: '8.8.8.8' })
      await api('/v1/ip', { ip: '8.8.8.8' })
      await api('/v1/ip', { ip: '1.1.1.1' })
      expect(a.recommendation.action).toBe('verify')
      const recorded = await api('/v1/outcomes', { outcomes: [{ request_id: a.request.id, outcome: 'legitimate' }, { input: '1.1.1.1', type: 'ip', outcome: 'fraud' }] })
      expect(recorded.results.map((x: { status: string }) => x.status)).toEqual(['recorded', 'recorded'])

      expect((await c.get(`${team}/keys`)).body).toContain(`href="${team}/policy"`)
      const first = await c.get(`${team}/policy`)
      expect(first.status).toBe(200)
      expect(pageText(first.body)).toContain('The service policy (no policy of this team\'s own).')

      const bad = await c.post(`${team}/policy/test`, { policy: 'weights: { ip_vpn: "high" }\nthresholds: { medium: 90, high: 10 }\nnonsense: 1\n' })
      expect(bad.status).toBe(400)
      const errors = /<section class="card" id="policy-errors">([\s\S]*?)<\/section>/.exec(bad.body)?.[1] ?? ''
      expect(pageText(errors)).toMatch(/weights\.ip_vpn/)
      expect(pageText(errors)).toMatch(/nonsense/)
      expect((errors.match(/<li>/g) ?? []).length).toBeGreaterThanOrEqual(3)
      expect((await c.post(`${team}/policy/test`, { policy: `# ${'x'.repeat(70_000)}\nweights: {}\n` })).status).toBe(413)

      const tested = await c.post(`${team}/policy/test`, { policy: BLOCK_DATACENTERS })
      expect(tested.status).toBe(200)
      const text = pageText(tested.body)
      expect(text).toContain('3 read, 3 re-scored; 2 change action')
      expect(text).toContain("Labels: the org's outcomes — 2 current risk outcome(s) as labels")
      expect(tested.body).toContain('id="metrics"')
      expect(tested.body).toContain('id="good-held"')
      expect(pageText(/<p class="meta" id="review-queue">[\s\S]*?<\/p>/.exec(tested.body)![0])).toContain('Review queue (answers with action review): 0 now → 0 with the candidate')
      // good: 1 (the first 8.8.8.8, verify → block); fraud: 1 (1.1.1.1, approve); the second 8.8.8.8 has no label.
      const labels = pageText(/<table id="labels">[\s\S]*?<\/table>/.exec(tested.body)![0])
      expect(labels).toContain('fraud (1) approve 1 100.0% 1 100.0%')
      expect(labels).toContain('good (1) approve 0 0.0% 0 0.0% verify 1 100.0% 0 0.0% review 0 0.0% 0 0.0% block 0 0.0% 1 100.0%')
      expect(pageText(/<table id="good-held">[\s\S]*?<\/table>/.exec(tested.body)![0])).toBe('good customers current candidate blocked 0 0.0% 1 100.0% sent to review 0 0.0% 0 0.0%')
      const version = /data-testid="candidate-version">([^<]+)</.exec(tested.body)![1]!
      const candidate = unescape(/name="candidate" value="([^"]*)"/.exec(tested.body)![1]!)
      const signature = /name="signature" value="([^"]*)"/.exec(tested.body)![1]!

      // A candidate changed after it was tested, or one never tested here, is refused.
      expect((await c.post(`${team}/policy/apply`, { candidate: candidate.replace('datacenter_blocks', 'x_blocks'), signature })).status).toBe(400)
      expect((await c.post(`${team}/policy/discard`, {})).header('location')).toBe(`${team}/policy?done=discarded`)
      expect((await api('/v1/ip', { ip: '8.8.8.8' })).recommendation.action).toBe('verify')
      expect((await api('/v1/account')).policy_version).toBeNull()

      const applied = await c.post(`${team}/policy/apply`, { candidate, signature })
      expect(applied.status).toBe(303)
      expect(applied.header('location')).toBe(`${team}/policy?done=applied`)
      expect((await api('/v1/ip', { ip: '8.8.8.8' })).recommendation.action).toBe('block')
      expect((await api('/v1/account')).policy_version).toBe(version)
      const shown = await c.get(`${team}/policy?done=applied`)
      expect(shown.body).toContain(`data-testid="version">${version}<`)
      expect(pageText(shown.body)).toContain('rules (in order): unusable_input_blocks → block, datacenter_blocks → block')
    })

    it('a developer gets 403 and no Policy link', async () => {
      const dev = new Client(r.base)
      await dev.signUp('dev@example.test', 'Dev own team')
      const user = (await r.app.dashboard!.teams.getUserByEmail('dev@example.test'))!
      await r.app.dashboard!.teams.putMember({ orgId: team.split('/').pop()!, userId: user.id, role: 'developer', createdAt: r.clock.t })
      const keys = await dev.get(`${team}/keys`)
      expect(keys.status).toBe(200)
      expect(keys.body).not.toContain(`href="${team}/policy"`)
      expect((await dev.get(`${team}/policy`)).status).toBe(403)
      expect((await dev.post(`${team}/policy/test`, { policy: BLOCK_DATACENTERS })).status).toBe(403)
      expect((await dev.post(`${team}/policy/apply`, { candidate: '{}', signature: 'x' })).status).toBe(403)
    })
  })
})
