/**
 * `riskcheck policy test FILE --db DB | --database-url URL --org ORG_ID` through the real command (a child process), on
 * SQLite and on PostgreSQL (a schema of the suite's own, dropped after; needs RISKCHECK_TEST_DATABASE_URL): a server
 * answers four lookups and records outcomes about them, then the command reports the backtest labelled by them —
 * the same report `admin policy set --dry-run` gives — in text, JSON and HTML, with --labels / --no-outcomes, and
 * refuses wrong mixes of flags with exit 64 (those cases in this process, through runCli, which the command runs).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { issueApiKey } from '../src/accounts/keys.js'
import { runAdmin } from '../src/cli/admin-command.js'
import { runCli } from '../src/cli/main.js'
import { postgresLocation } from '../src/cli/database.js'
import { createServer } from '../src/server/app.js'
import { openPostgresServerStores } from '../src/server/store/postgres/server.js'
import type { Store } from '../src/server/store/contracts/store.js'
import type { OrgPolicyStore } from '../src/server/store/contracts/org-policies.js'
import { nodeArgs } from './child-process.js'
import { fakeClock } from './clock.js'
import { memoryIO } from './helpers.js'

const PG_URL = process.env.RISKCHECK_TEST_DATABASE_URL
if (!PG_URL) console.log('[skipped] policy test on PostgreSQL: set RISKCHECK_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test to run it')
let dir: string
let policyFile: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'riskcheck-policy-store-'))
  policyFile = join(dir, 'block-datacenters.yaml')
  // Offline, 8.8.8.8 fires ip_datacenter and ip_cloud (verify); 1.1.1.1 fires nothing (approve).
  writeFileSync(policyFile, 'rules:\n  - unusable_input_blocks\n  - { name: datacenter_blocks, when: { any: [ip_datacenter] }, action: block }\n')
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Runs the real `riskcheck args` to its end. */
function riskcheck(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RISKCHECK_DB: '', RISKCHECK_DATABASE_URL: '' } })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err })))
}

/**
 * Answers four lookups now (the command reads the last 7 days by the real clock) and records outcomes:
 * A (8.8.8.8, verify) fraud, B (8.8.8.8, verify) good after a superseded chargeback, C and D (1.1.1.1, approve) good
 * by input, D fraud by a later outcome of its request; a delivery outcome and one about an input never seen.
 */
async function seed(db: string | Store, orgPolicies?: OrgPolicyStore): Promise<string> {
  const clock = fakeClock(new Date())
  let rateMs = 0
  const app = createServer({ db, ...(orgPolicies ? { orgPolicies } : {}), dashboard: false, purgeIntervalMs: 0, rateLimitNow: () => (rateMs += 1000), riskcheck: { offline: true, now: clock.now } })
  await app.ready()
  const now = clock.now().getTime()
  const org = await app.store.createOrg({ name: 'Candidates Co', planId: 'starter' }, now)
  const live = (await issueApiKey(app.store, { orgId: org.id, name: 'live' }, now)).secret
  const post = async (url: string, body: unknown) => {
    const r = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${live}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
    expect(r.statusCode, r.body).toBe(200)
    return JSON.parse(r.body).data
  }
  const ip = async (v: string) => (await post('/v1/ip', { ip: v })).request.id as string
  try {
    const [a, b] = [await ip('8.8.8.8'), await ip('8.8.8.8')]
    await ip('1.1.1.1')
    const d = await ip('1.1.1.1')
    await post('/v1/outcomes', {
      outcomes: [
        { request_id: a, outcome: 'fraud' },
        { request_id: b, outcome: 'chargeback' },
        { input: '1.1.1.1', type: 'ip', outcome: 'legitimate' },
        { input: 'jane@example.org', type: 'email', outcome: 'bounced' },
        { input: '203.0.113.9', type: 'ip', outcome: 'fraud' },
      ],
    })
    clock.advance(1000)
    await post('/v1/outcomes', { outcomes: [{ request_id: b, outcome: 'legitimate' }, { request_id: d, outcome: 'account_takeover' }] })
  } finally {
    await app.close() // writes the answer log
  }
  return org.id
}

/** What the command must report over the seeded org, and that it is what admin policy set --dry-run reports. */
async function check(orgId: string, where: string[]) {
  const html = join(dir, `report-${randomBytes(3).toString('hex')}.html`)
  const labelsFile = join(dir, `labels-${randomBytes(3).toString('hex')}.csv`)
  writeFileSync(labelsFile, 'input,label\n8.8.8.8,good\n')
  const dry = memoryIO()
  // The runs only read the database (and each writes its own file): side by side, each checked on its own below.
  const [text, json, dryCode, none, file, unknown] = await Promise.all([
    riskcheck(['policy', 'test', policyFile, '--org', orgId, ...where]),
    riskcheck(['policy', 'test', '--policy', policyFile, '--org', orgId, '--mode', 'live', '--json', '--html', html, ...where]),
    runAdmin(['policy', 'set', '--org', orgId, policyFile, '--dry-run', '--json', ...where], dry),
    riskcheck(['policy', 'test', policyFile, '--org', orgId, '--no-outcomes', '--json', ...where]),
    riskcheck(['policy', 'test', policyFile, '--org', orgId, '--labels', labelsFile, '--json', '--context', 'checkout', ...where]),
    riskcheck(['policy', 'test', policyFile, '--org', 'org_nope', ...where]),
  ])
  expect(text.code, text.err).toBe(0)
  expect(text.out).toContain("Labels: the org's outcomes — 5 current risk outcome(s) as labels")
  expect(text.out).toContain(`over the live answers of ${orgId} in the last 7 days`)
  expect(text.out).toContain('good customers blocked: 0 → 1 of 2 (0.0% → 50.0%)')
  expect(text.out).toMatch(/ {2}block +– +50\.0% +0\.0% +50\.0%/)

  expect(json.code, json.err).toBe(0)
  const out = JSON.parse(json.out)
  expect(out).toMatchObject({ policy: { file: policyFile }, org: orgId, mode: 'live', context: null, answers: { read: 4 } })
  expect(out.label_source).toEqual({ source: 'outcomes', file: null, outcomes: { outcomes: 6, labels: 5, delivery: 1, superseded: 0, answersWithoutRequestId: 0 } })
  expect(out).toMatchObject({ read: 4, scored: 4, changed: 2 })
  expect(out.changes).toHaveLength(2)
  const report = { ...out }
  for (const k of ['policy', 'org', 'mode', 'answers', 'context', 'label_source']) delete report[k]
  // The candidate's report is exactly the dry run's (the same backtest of the same answers and outcomes).
  expect(dryCode, dry.err()).toBe(0)
  expect(report).toEqual(JSON.parse(dry.out()).backtest)
  expect(report.labels).toMatchObject({ given: 5, matched: 4, unmatched: 1 })
  expect(readFileSync(html, 'utf8')).toContain(`the live answers of ${orgId}`)

  // --no-outcomes: no labels; --labels FILE: the file's; --context: every answer judged in it.
  expect(none.code, none.err).toBe(0)
  expect(JSON.parse(none.out).label_source.source).toBe('none')
  expect(JSON.parse(none.out).labels).toBeNull()
  expect(file.code, file.err).toBe(0)
  const fromFile = JSON.parse(file.out)
  expect(fromFile.label_source).toEqual({ source: 'file', file: labelsFile, outcomes: null })
  expect(fromFile.context).toBe('checkout')

  // An org the database does not hold: exit 64, named.
  expect(unknown.code).toBe(64)
  expect(unknown.err).toContain('--org org_nope: no such org in this database')
}

describe('riskcheck policy test over an org’s stored answers, labelled by its outcomes', () => {
  it('SQLite', { timeout: 90_000 }, async () => {
    const db = join(dir, 'service.sqlite')
    const orgId = await seed(db)
    await check(orgId, ['--db', db])
  })

  it.skipIf(!PG_URL)('PostgreSQL', { timeout: 90_000 }, async () => {
    const schema = `rc_poltest_${randomBytes(5).toString('hex')}`
    const u = new URL(PG_URL!)
    u.searchParams.set('schema', schema)
    const pgs = await openPostgresServerStores(postgresLocation(u.toString()), { migrate: true })
    try {
      const orgId = await seed(pgs.store, pgs.orgPolicies)
      await check(orgId, ['--database-url', u.toString()])
    } finally {
      await pgs.close().catch(() => {})
      const pool = new pg.Pool({ connectionString: PG_URL })
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await pool.end()
    }
  })

  it('usage errors exit 64 with what is wrong', { timeout: 90_000 }, async () => {
    const db = join(dir, 'usage.sqlite')
    writeFileSync(db, '')
    const cases: [string[], string][] = [
      [[policyFile, '--db', db], '--org ORG_ID is required with --db / --database-url'],
      [[policyFile, '--org', 'org_1'], '--org reads the answers the service logged: give its database too'],
      [[policyFile, '--org', 'org_1', '--db', db, '--database-url', 'postgres://u@127.0.0.1:1/x'], '--db and --database-url exclude each other'],
      [[policyFile, '--org', 'org_1', '--db', db, '--results', 'answers.jsonl'], '--results and --db / --database-url exclude each other'],
      [[policyFile, '--org', 'org_1', '--db', db, '--mode', 'test'], '--mode test: the service logs the answers of live keys only'],
      [[policyFile, '--org', 'org_1', '--db', db, '--mode', 'staging'], '--mode must be live or test'],
      [[policyFile, '--org', 'org_1', '--db', db, '--no-outcomes', '--labels', 'l.csv'], '--no-outcomes and --labels / --outcomes cannot be used together'],
      [[policyFile, '--org', 'org_1', '--db', db, '--format', 'csv'], '--format is the format of --results'],
      [[policyFile, '--org', 'org_1', '--database-url', 'mysql://x'], '--database-url must start with postgres://'],
      [[policyFile, '--org', 'org_1', '--db', join(dir, 'absent.sqlite')], 'absent.sqlite: no such file'],
      [[policyFile, '--results', 'answers.jsonl', '--no-outcomes'], "--no-outcomes is for an org's answers"],
      [[policyFile, '--policy', policyFile, '--org', 'org_1', '--db', db], 'give the policy file once'],
      [['--org', 'org_1', '--db', db], '--policy FILE is required'],
    ]
    // The command's own parser (runCli) in this process: a child per case loaded the whole CLI to print one line.
    // That the process exits with runCli's code is the unknown org's case above, a real child.
    for (const [args, message] of cases) {
      const io = memoryIO()
      const code = await runCli(['policy', 'test', ...args], io)
      expect(code, `${args.join(' ')}: ${io.err()}`).toBe(64)
      expect(io.err()).toContain(message)
    }
  })
})
