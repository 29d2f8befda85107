/**
 * Per-org scoring policies end to end: `riskcheck serve` on loopback and `riskcheck admin policy …` on the same
 * SQLite file — the CLI also as a separate process (dist/, built by `npm test`) — with no restart in between:
 * set → the org's next request is scored under it and GET /v1/account shows its version id; clear → back to the
 * service policy; --dry-run changes nothing; a bad file exits 64 naming each error's path; and the backtest
 * `policy set` prints covers the org's answers of the last 7 days only.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAdmin } from '../src/cli/admin-command.js'
import { evaluate, loadPolicyFile, parsePolicy, type PolicyFile } from '../src/scoring/index.js'
import {
  ANSWER_LOG_TTL_MS,
  createSqliteOrgPolicyStore,
  type LoggedAnswer,
  type OrgPolicyStore,
} from '../src/server/store/sqlite/org-policies.js'
import { createSqliteStore, type SqliteStore } from '../src/server/store/sqlite/store.js'
import type { Store } from '../src/server/store/contracts/store.js'
import { memoryIO } from './helpers.js'
import { serveInProcess, startTestServer, type TestServer } from './server-helpers.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BAD_POLICY = join(ROOT, 'examples', 'policy', 'bad.yaml')

let dir: string
let db: string
let blockDatacenters: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-org-policy-'))
  db = join(dir, 'org-policy.sqlite')
  blockDatacenters = join(dir, 'block-datacenters.yaml')
  // Offline, 8.8.8.8 fires ip_datacenter and ip_cloud (score 40: verify); 1.1.1.1 fires nothing (approve).
  writeFileSync(
    blockDatacenters,
    [
      'description: Datacenter networks block',
      'rules:',
      '  - unusable_input_blocks',
      '  - { name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }',
      '',
    ].join('\n'),
  )
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function admin(...args: string[]): Promise<{ code: number; out: string; err: string; json: any }> {
  const io = memoryIO()
  const code = await runAdmin([...args, '--db', db], io)
  const out = io.out()
  let json: unknown
  if (args.includes('--json') && code === 0) json = JSON.parse(out)
  return { code, out, err: io.err(), json }
}

/** `riskcheck admin …` as its own process (the built CLI), against the same database file. */
function adminProcess(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'riskcheck.js'), 'admin', ...args, '--db', db], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out, err })))
}

describe('per-org policies: riskcheck serve and riskcheck admin policy on one database', () => {
  it('set → scored under it from the next request and shown in /v1/account; dry run and bad files change nothing; clear → the service policy', async () => {
    expect(existsSync(join(ROOT, 'dist', 'cli.js')), 'dist/ is built by `npm install` and `npm test`').toBe(true)
    const org = (await admin('org', 'create', '--name', 'Policy Co', '--plan', 'starter', '--json')).json
    const other = (await admin('org', 'create', '--name', 'Bystander', '--json')).json
    const live = (await admin('key', 'create', '--org', org.id, '--json')).json.secret as string
    const test = (await admin('key', 'create', '--org', org.id, '--mode', 'test', '--json')).json.secret as string
    const otherKey = (await admin('key', 'create', '--org', other.id, '--json')).json.secret as string
    const { version } = await loadPolicyFile(blockDatacenters)

    const { url, io, stop, exit } = await serveInProcess(['--port', '0', '--db', db, '--offline', '--json', '--log-level', 'silent'])
    const call = async (path: string, key: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      expect(res.status).toBe(200)
      return ((await res.json()) as { data: any }).data
    }
    const actionOf = async (ip: string, key = live) => (await call('/v1/ip', key, { ip })).recommendation.action as string
    const policyVersion = async (key = live) => (await call('/v1/account', key)).policy_version as string | null

    try {
      // The service default.
      expect(await actionOf('8.8.8.8')).toBe('verify')
      expect(await actionOf('1.1.1.1')).toBe('approve')
      expect(await policyVersion()).toBeNull()

      // A dry run prints the backtest over the answers just given and changes nothing.
      const dry = await admin('policy', 'set', '--org', org.id, blockDatacenters, '--dry-run', '--json')
      expect(dry.code).toBe(0)
      expect(dry.json).toMatchObject({ org: org.id, policy: { version, file: blockDatacenters }, previous: null, applied: false, dry_run: true })
      expect(dry.json.backtest).toMatchObject({ read: 2, scored: 2, changed: 1 })
      expect(dry.json.backtest.matrix.verify.block).toBe(1)
      expect(dry.json.backtest.matrix.approve.approve).toBe(1)
      expect(dry.json.backtest.changes.map((c: { input: string }) => c.input)).toEqual(['8.8.8.8'])
      expect(await actionOf('8.8.8.8')).toBe('verify')
      expect(await policyVersion()).toBeNull()

      // A bad file: exit 64, each error with its path; nothing changes.
      const bad = await admin('policy', 'set', '--org', org.id, BAD_POLICY)
      expect(bad.code).toBe(64)
      for (const path of ['weights.email_disposable', 'weights.nope', 'thresholds', 'contexts.wedding']) expect(bad.err).toContain(path)
      expect(bad.err).toContain(`${BAD_POLICY} is not a valid policy (4 errors)`)
      expect(bad.out).toBe('')
      expect(await policyVersion()).toBeNull()
      // An unknown org: exit 1.
      expect((await admin('policy', 'set', '--org', 'org_nope', blockDatacenters)).code).toBe(1)

      // Set, by another process, while the server runs: the backtest first, then applied.
      const set = await adminProcess('policy', 'set', '--org', org.id, blockDatacenters)
      expect(set.err).toBe('')
      expect(set.code).toBe(0)
      expect(set.out).toContain(`Policy ${blockDatacenters} (${version}) over the answers of ${org.id} in the last 7 days`)
      expect(set.out).toMatch(/Read 3 answers: 3 re-scored/) // the check after the dry run is an answer too
      expect(set.out).toContain('Transition matrix')
      expect(set.out).toMatch(/\n {2}8\.8\.8\.8 +verify 40 +block \d+ +datacenter_blocks +ip_datacenter, ip_cloud\n/)
      expect(set.out).toMatch(/Changed: 2 of 3 \(66\.7%\)/)
      expect(set.out).toContain(`Applied: ${org.id} now uses policy ${version} (was the service policy), from its next request.`)

      // The next request is scored under it — live and test keys of the org; other orgs keep the service policy.
      expect(await actionOf('8.8.8.8')).toBe('block')
      expect(await actionOf('1.1.1.1')).toBe('approve')
      expect(await policyVersion()).toBe(version)
      expect(await policyVersion(test)).toBe(version)
      expect(await actionOf('8.8.8.8', otherKey)).toBe('verify')
      expect(await policyVersion(otherKey)).toBeNull()

      const shown = await admin('policy', 'show', '--org', org.id, '--json')
      expect(shown.json.policy).toMatchObject({ version, file: blockDatacenters, description: 'Datacenter networks block' })
      expect((await admin('policy', 'show', '--org', org.id)).out).toContain(`rules (in order): unusable_input_blocks → block, datacenter_blocks → block`)

      // Clear → back to the service policy from the next request.
      const cleared = await admin('policy', 'clear', '--org', org.id, '--json')
      expect(cleared.json).toEqual({ org: org.id, cleared: version })
      expect(await actionOf('8.8.8.8')).toBe('verify')
      expect(await policyVersion()).toBeNull()
      expect((await admin('policy', 'show', '--org', org.id, '--json')).json).toEqual({ org: org.id, policy: null })
      expect((await admin('policy', 'clear', '--org', org.id)).out).toContain('had no policy of its own; nothing changed')

      // The answer log holds the live answers of the org only (test-mode answers are fixtures, not answers).
      expect(await actionOf('8.8.8.8', test)).toBeTypeOf('string')
      const log = await admin('policy', 'set', '--org', org.id, blockDatacenters, '--dry-run', '--json')
      expect(log.json.backtest.changes.map((c: { input: string; current: { action: string } }) => `${c.input} ${c.current.action}`)).toEqual([
        '8.8.8.8 verify',
        '8.8.8.8 verify',
        '8.8.8.8 verify',
      ])
      expect(log.json.backtest.totals.current).toEqual({ approve: 2, verify: 3, review: 0, block: 1 })
    } finally {
      stop()
      expect(await exit).toBe(0)
    }
  })

  it('the backtest of policy set covers the org’s answers of the last 7 days only', async () => {
    const now = Date.parse('2026-11-23T12:00:00Z')
    const file = join(dir, 'seeded.sqlite')
    const store = createSqliteStore(file)
    const org = store.createOrg({ name: 'Seeded', planId: 'free' }, now)
    const other = store.createOrg({ name: 'Other', planId: 'free' }, now)
    const log = createSqliteOrgPolicyStore(store.db)
    const answer = (at: number, input: string, action: LoggedAnswer['action'], score: number, factors: string[]): LoggedAnswer => ({
      at,
      type: 'ip',
      input,
      action,
      score,
      factors,
      context: null,
    })
    const day = 24 * 60 * 60 * 1000
    log.appendAnswers(org.id, [
      answer(now - 8 * day, '203.0.113.8', 'verify', 40, ['ip_datacenter', 'ip_cloud']), // older than 7 days
      answer(now - ANSWER_LOG_TTL_MS - 1, '203.0.113.7', 'verify', 40, ['ip_datacenter']), // just older
      answer(now - ANSWER_LOG_TTL_MS, '203.0.113.6', 'verify', 40, ['ip_datacenter', 'ip_cloud']), // exactly 7 days
      answer(now - day, '203.0.113.1', 'verify', 40, ['ip_datacenter', 'ip_cloud']),
      answer(now - day, '1.1.1.1', 'approve', 0, []),
      answer(now - 60_000, '203.0.113.66', 'review', 70, ['ip_bogon']),
    ])
    log.appendAnswers(other.id, [answer(now - day, '198.51.100.1', 'verify', 40, ['ip_datacenter'])])
    store.close()

    const io = memoryIO()
    expect(await runAdmin(['policy', 'set', '--org', org.id, blockDatacenters, '--dry-run', '--json', '--db', file], io, { now: () => now })).toBe(0)
    const out = JSON.parse(io.out())
    expect(out.answers).toEqual({ since: new Date(now - ANSWER_LOG_TTL_MS).toISOString(), read: 4 })
    const report = out.backtest
    expect(report).toMatchObject({ read: 4, scored: 4, changed: 2 })
    expect(report.matrix.verify).toEqual({ approve: 0, verify: 0, review: 0, block: 2 })
    expect(report.matrix.approve.approve).toBe(1)
    expect(report.matrix.review.review).toBe(1)
    expect(report.totals.candidate).toEqual({ approve: 1, verify: 0, review: 1, block: 2 })
    expect(report.changes.map((c: { input: string; current: unknown; candidate: { action: string; rule: string } }) => [c.input, c.current, c.candidate.action, c.candidate.rule])).toEqual([
      ['203.0.113.6', { action: 'verify', score: 40 }, 'block', 'datacenter_blocks'],
      ['203.0.113.1', { action: 'verify', score: 40 }, 'block', 'datacenter_blocks'],
    ])

    // The text report: the same matrix and changes, the shares of all re-scored answers.
    const text = memoryIO()
    expect(await runAdmin(['policy', 'set', '--org', org.id, blockDatacenters, '--dry-run', '--db', file], text, { now: () => now })).toBe(0)
    const lines = text.out().split('\n')
    expect(lines).toContain('Read 4 answers: 4 re-scored')
    expect(lines.find((l) => l.trimStart().startsWith('verify'))).toMatch(/^ {2}verify +0 +0 +0 +2 \(50\.0%\) +2 \(50\.0%\)$/)
    expect(lines).toContain('Changed: 2 of 4 (50.0%)')
    expect(text.out()).not.toContain('203.0.113.7')
    expect(text.out()).not.toContain('203.0.113.8')
    expect(text.out()).not.toContain('198.51.100.1')
    expect(lines.at(-2)).toBe(`Dry run: nothing changed; ${org.id} still uses the service policy.`)

    // Nothing was applied.
    const after = createSqliteStore(file)
    expect(createSqliteOrgPolicyStore(after.db).getOrgPolicy(org.id)).toBeNull()
    after.close()
  })
})

/** Applies a policy file to an org the way `admin policy set` does. */
function setPolicy(policies: OrgPolicyStore, orgId: string, file: PolicyFile, setAt = 0) {
  return policies.setOrgPolicy({ orgId, version: file.version, canonical: file.canonical, description: file.description, source: null, setAt })
}

describe('per-org policies in the server', () => {
  const serviceFile = () => parsePolicy('rules: [unusable_input_blocks, { name: cloud_reviews, when: { any: [ip_cloud] }, action: review }]', { format: 'yaml' })
  const orgFile = () => loadPolicyFile(blockDatacenters)

  /** A server over its own SQLite store with a `serve --policy` policy, counting reads of the org-policy store. */
  async function start(wrap: (store: SqliteStore) => Store = (st) => st, failWrites = false) {
    const store = createSqliteStore(':memory:')
    const policies = createSqliteOrgPolicyStore(store.db)
    const reads = { policy: 0, version: 0 }
    const counted: OrgPolicyStore = {
      ...policies,
      appendAnswers: (orgId, answers) => {
        if (failWrites) throw new Error('disk full')
        return policies.appendAnswers(orgId, answers)
      },
      getOrgPolicy: (orgId) => (reads.policy++, policies.getOrgPolicy(orgId)),
      getOrgPolicyVersion: (orgId) => (reads.version++, policies.getOrgPolicyVersion(orgId)),
    }
    const warnings: string[] = []
    const s: TestServer = await startTestServer({
      db: wrap(store),
      orgPolicies: counted,
      riskcheck: { scoring: (await serviceFile()).overrides },
      logger: { level: 'warn', stream: { write: (line: string) => void warnings.push(line) } },
    })
    const action = async (ip: string, key = s.live) => (await s.post('/v1/ip', { ip }, key)).body.data.recommendation.action as string
    const version = async (key = s.live) => (await s.get('/v1/account', key)).body.data.policy_version as string | null
    return {
      s,
      store,
      policies,
      reads,
      warnings,
      action,
      version,
      async close() {
        await s.close()
        store.close()
      },
    }
  }

  it('precedence: the org policy > serve --policy > the built-in default; test keys and bulk rows follow it; compiled once per version', async () => {
    const t = await start()
    try {
      const org = await orgFile()
      expect(await t.action('8.8.8.8')).toBe('review') // serve --policy (the built-in default says verify)
      expect(await t.version()).toBeNull()

      setPolicy(t.policies, t.s.org.id, org)
      for (let i = 0; i < 5; i++) expect(await t.action('8.8.8.8')).toBe('block')
      expect(await t.action('1.1.1.1')).toBe('approve')
      expect(await t.version()).toBe(org.version)
      // The version comes with the key; the policy itself is read and compiled once.
      expect(t.reads).toEqual({ policy: 1, version: 0 })

      // A test key of the org is scored under it too (its answers are fixtures: the same factors, the org's action).
      const test = (await t.s.post('/v1/ip', { ip: '8.8.8.8' }, t.s.test)).body.data
      expect(test.recommendation.action).toBe(evaluate(test.risk.factors, { policy: org.policy }).action)
      expect(await t.version(t.s.test)).toBe(org.version)

      // Bulk rows of a job created after the change.
      const job = await t.s.post('/v1/bulk/jobs', { type: 'ip', inputs: ['8.8.8.8', '1.1.1.1'] }, t.s.live)
      expect(job.status).toBe(202)
      let rows: Array<{ input: string; action: string }> = []
      for (let i = 0; i < 400; i++) {
        const r = await t.s.get(`/v1/bulk/jobs/${job.body.data.id}`)
        if (r.body.data.status === 'completed') {
          rows = (await t.s.get(`/v1/bulk/jobs/${job.body.data.id}/results`)).body.data
          break
        }
        await new Promise((r) => setTimeout(r, 10))
      }
      expect(rows.map((r) => [r.input, r.action])).toEqual([
        ['8.8.8.8', 'block'],
        ['1.1.1.1', 'approve'],
      ])

      // Replaced: the new version applies at once; cleared: back to serve --policy.
      const next = await parsePolicy('thresholds: { medium: 30, high: 35, critical: 90 }', { format: 'yaml' })
      setPolicy(t.policies, t.s.org.id, next)
      expect(await t.action('8.8.8.8')).toBe('review')
      expect(await t.version()).toBe(next.version)
      t.policies.clearOrgPolicy(t.s.org.id)
      expect(await t.action('8.8.8.8')).toBe('review')
      expect(await t.version()).toBeNull()
      setPolicy(t.policies, t.s.org.id, org)
      expect(await t.action('8.8.8.8')).toBe('block')
      expect(t.reads.policy).toBe(2) // `org` was still compiled
    } finally {
      await t.close()
    }
  })

  it('a store that does not read the version with the key: the org-policy store is asked on each request', async () => {
    const t = await start((store) => ({
      ...store,
      getAuth(keyId: string) {
        const r = store.getAuth(keyId)
        if (r) delete r.org.policyVersion
        return r
      },
    }))
    try {
      const org = await orgFile()
      expect(await t.action('8.8.8.8')).toBe('review')
      setPolicy(t.policies, t.s.org.id, org)
      expect(await t.action('8.8.8.8')).toBe('block')
      expect(await t.version()).toBe(org.version)
      expect(t.reads).toEqual({ policy: 1, version: 3 })
    } finally {
      await t.close()
    }
  })

  it('a stored policy this riskcheck refuses: the service policy applies, one warning, version null', async () => {
    const t = await start()
    try {
      t.policies.setOrgPolicy({ orgId: t.s.org.id, version: 'pol_00000000000000aa', canonical: '{"weights":{"ip_gone":10}}', description: null, source: null, setAt: 0 })
      expect(await t.action('8.8.8.8')).toBe('review')
      expect(await t.action('8.8.8.8')).toBe('review')
      expect(await t.version()).toBeNull()
      const refused = t.warnings.filter((l) => l.includes('pol_00000000000000aa'))
      expect(refused).toHaveLength(1)
      expect(refused[0]).toContain('cannot be used')
      expect(refused[0]).toContain('weights.ip_gone')
    } finally {
      await t.close()
    }
  })

  it('live answers are logged, written by shutdown at the latest; a failing log write is one warning, not a failed request', async () => {
    const t = await start()
    await t.action('8.8.8.8')
    await t.action('8.8.8.8', t.s.test) // test mode: not logged
    const check = await t.s.post('/v1/check', { email: 'jane@mailinator.com', ip: '8.8.8.8', context: 'signup' })
    expect(check.status).toBe(200)
    await t.s.close() // the store stays open: it was passed in
    const logged = t.policies.listAnswers(t.s.org.id, 0)
    t.store.close()
    expect(logged.map((a) => [a.type, a.input, a.action, a.context])).toEqual([
      ['ip', '8.8.8.8', 'review', null],
      ['check', 'jane@mailinator.com · 8.8.8.8', check.body.data.recommendation.action, 'signup'],
    ])
    expect(logged[1]!.factors).toEqual(check.body.data.risk.factors)
    expect(logged[1]!.score).toBe(check.body.data.risk.score)

    const failing = await start(undefined, true)
    try {
      expect(await failing.action('8.8.8.8')).toBe('review')
      await new Promise((r) => setImmediate(r))
      expect(failing.warnings.filter((l) => l.includes('answer log'))).toHaveLength(1)
      expect(failing.warnings.find((l) => l.includes('answer log'))).toContain('disk full')
    } finally {
      await failing.close()
    }
  })
})
