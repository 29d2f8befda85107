/**
 * `riskcheck policy check | test | schema`, and `--policy FILE` on the lookups, on `riskcheck bulk` and on
 * `riskcheck serve`: run in-process with files in a temporary directory, no network.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { runAdmin } from '../src/cli/admin-command.js'
import { runCli, type CliIO } from '../src/cli/main.js'
import { runServe } from '../src/cli/serve-command.js'
import { backtest, loadPolicyFile, readLabels, readResults } from '../src/scoring/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const EXAMPLE = {
  policy: `${root}examples/policy/policy.yaml`,
  answers: `${root}examples/policy/answers.jsonl`,
  labels: `${root}examples/policy/labels.csv`,
}
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-policy-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Streams that collect what is written at once (so a test reads it right after the command returns). */
function memoryIO(stdin = ''): CliIO & { out(): string; err(): string } {
  let out = ''
  let err = ''
  const sink = (add: (s: string) => void) =>
    new Writable({
      write(chunk: Buffer, _enc, done) {
        add(chunk.toString())
        done()
      },
    })
  return { stdin: Readable.from([stdin]), stdout: sink((s) => (out += s)), stderr: sink((s) => (err += s)), out: () => out, err: () => err }
}

async function cli(...args: string[]) {
  const io = memoryIO()
  const code = await runCli(args, io)
  return { code, out: io.out(), err: io.err() }
}

const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

const BAD = file(
  'bad.yaml',
  `weights:
  email_disposable: 120
  nope: 3
thresholds: { medium: 70, high: 60 }
contexts: { wedding: {} }
`,
)
const STRICT = file('strict.yaml', 'weights:\n  email_disposable: 90\n')

describe('riskcheck policy check', () => {
  it('validates a good file: exit 0, its version id and what it changes', async () => {
    const r = await cli('policy', 'check', EXAMPLE.policy)
    expect(r.code).toBe(0)
    const version = (await loadPolicyFile(EXAMPLE.policy)).version
    expect(r.out.split('\n')).toEqual([
      `${EXAMPLE.policy}: valid — version ${version} — Signup — throwaway addresses block; datacenter networks weigh less; review from 70.`,
      '  weights: email_disposable 70 → 85, ip_datacenter 30 → 20',
      '  thresholds: verify from 40, review from 70, block from 85 (default 40, 65, 85)',
      '  rules (in order): unusable_input_blocks → block',
      '',
    ])
  })

  it('prints every error of a bad file with its path and line, exit 64', async () => {
    const r = await cli('policy', 'check', BAD)
    expect(r.code).toBe(64)
    expect(r.out.split('\n')).toEqual([
      `${BAD}: invalid — 4 errors`,
      '  weights.email_disposable (line 2): must be a number from 0 to 100 (got 120)',
      '  weights.nope (line 3): is not a factor code of the vocabulary (see "Factor vocabulary" in docs/scoring.md)',
      '  thresholds (line 4): must satisfy medium <= high <= critical (got medium 70, high 60, critical 85)',
      '  contexts.wedding (line 5): is not a context (signup, lead, checkout)',
      '',
    ])
    const json = memoryIO()
    expect(await runCli(['policy', 'check', BAD, '--json'], json)).toBe(64)
    expect(JSON.parse(json.out())).toMatchObject({ valid: false, errors: [{ path: 'weights.email_disposable', line: 2 }, {}, {}, {}] })
  })

  it('prints warnings of a valid file, and exits 64 for a missing file or bad usage', async () => {
    const dropped = file('dropped.json', JSON.stringify({ rules: [{ name: 'tor', when: { any: ['ip_tor'] }, action: 'block' }] }))
    const r = await cli('policy', 'check', dropped)
    expect(r.code).toBe(0)
    expect(r.out).toMatch(/warning: rules \(line 1\): replaces the base rules without unusable_input_blocks/)
    const missing = await cli('policy', 'check', join(dir, 'missing.yaml'))
    expect(missing.code).toBe(64)
    expect(missing.err).toMatch(/cannot read .*missing\.yaml: ENOENT/)
    expect((await cli('policy', 'check')).code).toBe(64)
    expect((await cli('policy', 'frobnicate')).code).toBe(64)
    expect((await cli('policy', '--help')).out).toMatch(/riskcheck policy test --policy FILE --results RESULTS/)
  })

  it('policy schema prints the published JSON Schema', async () => {
    const r = await cli('policy', 'schema')
    expect(r.code).toBe(0)
    expect(r.out).toBe(readFileSync(`${root}docs/policy.schema.json`, 'utf8'))
  })
})

describe('riskcheck policy test', () => {
  it('prints the matrix, the changes, the label outcomes and the sweeps', async () => {
    const r = await cli('policy', 'test', '--policy', EXAMPLE.policy, '--results', EXAMPLE.answers, '--labels', EXAMPLE.labels)
    expect(r.code, r.err).toBe(0)
    const lines = r.out.split('\n')
    expect(lines[1]).toBe('Read 14 answers: 14 re-scored')
    expect(r.out).toContain(
      [
        '  current ↓ / candidate →    approve     verify     review      block      total',
        '  approve                  4 (28.6%)          0          0          0  4 (28.6%)',
        '  verify                           0  1 (7.14%)          0          0  1 (7.14%)',
        '  review                           0  2 (14.3%)  1 (7.14%)  1 (7.14%)  4 (28.6%)',
        '  block                            0          0          0  5 (35.7%)  5 (35.7%)',
        '  total                    4 (28.6%)  3 (21.4%)  1 (7.14%)  6 (42.9%)         14',
      ].join('\n'),
    )
    expect(r.out).toContain('Changed: 3 of 14 (21.4%)')
    expect(r.out).toMatch(/kx99@guerrillamail\.com · 192\.0\.2\.1 +review 70 +block 85 +fraud +email_disposable/)
    expect(r.out).toContain('Labels: 13 given; 13 answers labelled (fraud 6, good 7)')
    expect(r.out).toContain('  fraud caught (blocked): 5 → 6 of 6 (83.3% → 100.0%)')
    expect(r.out).toContain('  good customers blocked: 0 → 0 of 7 (0.0% → 0.0%)')
    expect(r.out).toMatch(/Block threshold sweep[^\n]*\n[^\n]*\n(?:[^\n]*\n)*\s+85 ◀\s+6 \(100\.0%\)\s+0 \(0\.0%\)\n/)
    expect(r.out).toMatch(/Review threshold sweep[\s\S]*\s+70 ◀\s+6 \(100\.0%\)\s+1 \(14\.3%\)\n/)
  })

  it('--json gives the library report with every change; --changes limits the text list', async () => {
    const io = memoryIO()
    expect(await runCli(['policy', 'test', '--policy', EXAMPLE.policy, '--results', EXAMPLE.answers, '--labels', EXAMPLE.labels, '--json'], io)).toBe(0)
    const json = JSON.parse(io.out())
    const { policy, version } = await loadPolicyFile(EXAMPLE.policy)
    const lib = await backtest(readResults(EXAMPLE.answers), policy, { labels: await readLabels(EXAMPLE.labels) })
    expect(json).toEqual({ policy: { file: EXAMPLE.policy, version }, results: EXAMPLE.answers, context: null, ...JSON.parse(JSON.stringify(lib)) })
    const short = await cli('policy', 'test', '--policy', EXAMPLE.policy, '--results', EXAMPLE.answers, '--changes', '1')
    expect(short.out).toContain('  … 2 more (--changes N lists more; --json lists them all)')
  })

  it('--json streams every change of a large input', async () => {
    const many = file('many.jsonl', Array.from({ length: 5000 }, (_, i) => JSON.stringify({ input: `u${i}@x.example`, factors: ['email_disposable'], action: 'review' })).join('\n'))
    const io = memoryIO()
    expect(await runCli(['policy', 'test', '--policy', STRICT, '--results', many, '--json'], io)).toBe(0)
    const json = JSON.parse(io.out())
    expect(json.changed).toBe(5000)
    expect(json.changes).toHaveLength(5000)
    expect(json.changes[4999]).toMatchObject({ input: 'u4999@x.example', current: { action: 'review' }, candidate: { action: 'block', score: 90 } })
  })

  it('reads bulk results as written by riskcheck bulk (CSV and JSON lines) and from stdin; --context judges all in one context', async () => {
    const inputs = file('emails.txt', 'deliverable@example.com\ndisposable@example.com\nrole@example.com\nnot-an-email\n')
    const csv = join(dir, 'results.csv')
    const bulk = memoryIO()
    expect(await runCli(['bulk', '--type', 'email', inputs, '--out', csv, '--mode', 'test'], bulk)).toBe(0)
    const jsonl = memoryIO()
    expect(await runCli(['bulk', '--type', 'email', inputs, '--mode', 'test'], jsonl)).toBe(0)
    const fromCsv = await cli('policy', 'test', '--policy', STRICT, '--results', csv, '--json')
    const stdin = memoryIO(jsonl.out())
    expect(await runCli(['policy', 'test', '--policy', STRICT, '--results', '-', '--json'], stdin)).toBe(0)
    const a = JSON.parse(fromCsv.out)
    const b = JSON.parse(stdin.out())
    expect(a.scored).toBe(4)
    expect(a.changes.map((c: { input: string }) => c.input)).toEqual(['disposable@example.com'])
    expect({ ...a, results: null }).toEqual({ ...b, results: null })
    const lead = JSON.parse((await cli('policy', 'test', '--policy', STRICT, '--results', csv, '--json', '--context', 'lead')).out)
    const lib = await backtest(readResults(csv), (await loadPolicyFile(STRICT)).policy, { context: 'lead' })
    expect(lead).toMatchObject({ context: 'lead', matrix: lib.matrix, changes: JSON.parse(JSON.stringify(lib.changes)) })
    expect(lead.changes.every((c: { context: string }) => c.context === 'lead')).toBe(true)
  })

  it('exit 64 with a clear message: bad usage, an invalid policy, a results.csv without factors, a bad labels file', async () => {
    expect((await cli('policy', 'test', '--results', EXAMPLE.answers)).err).toMatch(/--policy FILE is required/)
    expect((await cli('policy', 'test', '--policy', STRICT)).err).toMatch(/--results RESULTS is required/)
    const ctx = await cli('policy', 'test', '--policy', STRICT, '--results', EXAMPLE.answers, '--context', 'wedding')
    expect([ctx.code, ctx.err]).toEqual([64, 'riskcheck policy test: --context must be one of signup, lead, checkout (got wedding)\n'])
    const bad = await cli('policy', 'test', '--policy', BAD, '--results', EXAMPLE.answers)
    expect(bad.code).toBe(64)
    expect(bad.err).toContain('  weights.email_disposable (line 2): must be a number from 0 to 100 (got 120)\n')
    const old = file('old.csv', 'input,action,status,reason,risk_score,credits_used,cache_hit,error\na@x.example,approve,valid,ok,0,1,false,\n')
    const o = await cli('policy', 'test', '--policy', STRICT, '--results', old)
    expect([o.code, o.err]).toEqual([64, expect.stringMatching(/old\.csv: this results\.csv has no factors column/)])
    const labels = file('labels.csv', 'input,label\na@x.example,maybe\n')
    const l = await cli('policy', 'test', '--policy', STRICT, '--results', EXAMPLE.answers, '--labels', labels)
    expect([l.code, l.err]).toEqual([64, expect.stringMatching(/labels\.csv: line 2: the label must be fraud or good \(got "maybe"\)/)])
    const missing = await cli('policy', 'test', '--policy', STRICT, '--results', join(dir, 'nope.jsonl'))
    expect([missing.code, missing.err]).toEqual([64, expect.stringMatching(/nope\.jsonl: ENOENT/)])
  })

  it('warns about lines that are not JSON and answers without factors, and still reports', async () => {
    const mixed = file('mixed.jsonl', ['{"input":"a","factors":[],"action":"approve"}', 'not json', '{"input":"b","action":"approve"}'].join('\n'))
    const r = await cli('policy', 'test', '--policy', STRICT, '--results', mixed)
    expect(r.code).toBe(0)
    expect(r.err).toContain('warning: 1 line(s) of')
    expect(r.err).toContain('(line 2)')
    expect(r.err).toContain('1 answer(s) carry no factors')
    expect(r.out).toContain('Read 3 answers: 1 re-scored, skipped no factors 1, not a result 1')
  })
})

describe('--policy FILE on lookups, bulk and serve', () => {
  it('applies the policy to a lookup and to a bulk job; an invalid policy is exit 64 with its errors', async () => {
    const plain = JSON.parse((await cli('email', 'disposable@example.com', '--mode', 'test')).out)
    const strict = JSON.parse((await cli('email', 'disposable@example.com', '--mode', 'test', '--policy', STRICT)).out)
    expect([plain.recommendation.action, plain.risk.score]).toEqual(['review', 70])
    expect([strict.recommendation.action, strict.risk.score]).toEqual(['block', 90])
    const bad = await cli('email', 'disposable@example.com', '--mode', 'test', '--policy', BAD)
    expect(bad.code).toBe(64)
    expect(bad.err).toContain(`riskcheck: --policy ${BAD} is not a valid policy (4 errors):\n  weights.email_disposable (line 2)`)
    const inputs = file('one.txt', 'disposable@example.com\n')
    const bulk = memoryIO()
    expect(await runCli(['bulk', '--type', 'email', inputs, '--mode', 'test', '--policy', STRICT], bulk)).toBe(0)
    expect(JSON.parse(bulk.out())).toMatchObject({ action: 'block', risk_score: 90, factors: ['email_disposable'] })
    expect(await runCli(['bulk', '--type', 'email', inputs, '--mode', 'test', '--policy', BAD], memoryIO())).toBe(64)
  })

  it('serve --policy applies it to every request and prints its version id', async () => {
    const db = join(dir, 'serve.sqlite')
    const admin = async (...args: string[]) => {
      const io = memoryIO()
      expect(await runAdmin([...args, '--db', db, '--json'], io)).toBe(0)
      return JSON.parse(io.out())
    }
    const org = await admin('org', 'create', '--name', 'Policy')
    const key = (await admin('key', 'create', '--org', org.id, '--mode', 'test')).secret as string
    const io = memoryIO()
    const stop = new AbortController()
    let url = ''
    const listening = new Promise<void>((resolve) => {
      void runServe(['--port', '0', '--db', db, '--json', '--log-level', 'silent', '--policy', STRICT], io, {
        signal: stop.signal,
        onListening: (u) => {
          url = u
          resolve()
        },
      }).then((code) => expect(code).toBe(0))
    })
    await listening
    try {
      expect(JSON.parse(io.out())).toEqual({ url, db, policy: { version: (await loadPolicyFile(STRICT)).version, file: STRICT }, dashboard_url: `${url}/dashboard` })
      const res = await fetch(`${url}/v1/email`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'disposable@example.com' }),
      })
      const body = (await res.json()) as { data: { recommendation: { action: string }; risk: { score: number } } }
      expect([body.data.recommendation.action, body.data.risk.score]).toEqual(['block', 90])
    } finally {
      stop.abort()
    }
    const bad = memoryIO()
    expect(await runServe(['--port', '0', '--db', db, '--policy', BAD], bad)).toBe(64)
    expect(bad.err()).toContain(`riskcheck serve: --policy ${BAD} is not a valid policy (4 errors):`)
  })
})
