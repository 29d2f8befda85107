/**
 * Every fenced code block of the README and of the guides in docs/ runs as a test (or says, in a
 * `<!-- readme-test: not run (…) -->` comment just above it, why it cannot). Two documents are checked elsewhere:
 * docs/api.md is generated from the OpenAPI document (test/docs.test.ts), and docs/deployment.md's blocks need a
 * production topology (test/deployment-doc.test.ts checks what it names).
 *
 * - `ts` blocks run as modules, with `riskcheck` in test mode (./readme/riskcheck-shim.ts: no network, the documented
 *   deterministic answers), and their `expression // value` comments are checked (`…` ends a prefix);
 * - `js` blocks are CommonJS: each runs in a child process, in a CommonJS project whose `riskcheck` is this checkout
 *   (its built dist/index.cjs), in test mode (./readme/riskcheck-shim.cjs); each `console.log(…) // 'value'` line
 *   must print that value;
 *   A `ts` block that is a test file (the generated copy of an `examples/` test) runs here too: its `it` cases are
 *   collected and awaited, with `import.meta.url` at the example's place so its relative files resolve;
 * - `sh` blocks run in the checkout, against loopback only: the set-up command with `--offline`, the server walk-
 *   through with a temporary database, a free port and RISKCHECK_OFFLINE=1;
 * - `yaml` blocks are policy files: each must load with no error and no warning;
 * - `console` blocks are transcripts (`$ riskcheck …` and what it prints) run in a copy of examples/policy/: the output
 *   must be what the block shows (a line `…` stands for lines left out; `# exit N` states the exit code);
 * - `text` blocks are usage synopses, not code: every `riskcheck` command line in them names a real command and only
 *   flags its `--help` lists.
 */
import { execFileSync, spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { signWebhook } from '../src/index.js'
import { parsePolicy } from '../src/scoring/index.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** The documents whose blocks run here: README.md, then docs/*.md but the two checked elsewhere. */
const CHECKED_ELSEWHERE = ['api.md', 'deployment.md']
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && !CHECKED_ELSEWHERE.includes(f)).sort().map((f) => `docs/${f}`)]
const dir = mkdtempSync(join(tmpdir(), 'riskcheck-readme-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface Block {
  /** `doc:line`, e.g. `docs/scoring.md:120` */
  where: string
  doc: string
  line: number
  lang: string
  code: string
  notRun: string | null
  /** the `examples/` file this block is the generated copy of, if any */
  example: string | null
}

function filesUnder(d: string): string[] {
  return readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? filesUnder(join(d, f)) : [join(d, f)]))
}
const EXAMPLES = filesUnder(join(ROOT, 'examples'))

/** The fenced blocks of a document, with the not-run reason written just above each, if any. */
function blocks(doc: string): Block[] {
  const out: Block[] = []
  const lines = readFileSync(join(ROOT, doc), 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)$/.exec(lines[i]!)
    if (!open) continue
    const end = lines.indexOf('```', i + 1)
    const marker = /^<!-- readme-test: not run \((.+)\) -->$/.exec(lines[i - 1] ?? '')
    const code = lines.slice(i + 1, end).join('\n')
    const generated = /^<!-- generated:\S+ -->$/.test(lines[i - 1] ?? '')
    const example = generated ? (EXAMPLES.find((f) => readFileSync(f, 'utf8').trimEnd() === code) ?? null) : null
    out.push({ where: `${doc}:${i + 1}`, doc, line: i + 1, lang: open[1]!, code, notRun: marker?.[1] ?? null, example })
    i = end
  }
  return out
}

const ALL = DOCUMENTS.flatMap(blocks)
const ts = ALL.filter((b) => b.lang === 'ts' && !b.notRun)
const js = ALL.filter((b) => b.lang === 'js' && !b.notRun)
const sh = ALL.filter((b) => b.lang === 'sh' && !b.notRun)
const yaml = ALL.filter((b) => b.lang === 'yaml' && !b.notRun)
const text = ALL.filter((b) => b.lang === 'text')
const transcripts = ALL.filter((b) => b.lang === 'console' && !b.notRun)

// ── `expression // value` comments ─────────────────────────────────────────────────────────────────────────────

const PREFIX = Symbol('prefix')
const REST = Symbol('rest')

/** The value a comment states, or undefined when the comment is prose. `'abc …'` is a prefix; `[a, …]` a start. */
function statedValue(comment: string): { ok: true; value: unknown } | { ok: false } {
  const text = comment
    .replace(/'([^'…]*?)\s*…'/g, (_m, p: string) => `{ [PREFIX]: ${JSON.stringify(p)} }`)
    .replace(/,\s*…\s*\]/g, ', REST]')
  try {
    return { ok: true, value: new Function('PREFIX', 'REST', `return (${text})`)(PREFIX, REST) }
  } catch {
    return { ok: false }
  }
}

function matches(actual: unknown, stated: unknown): boolean {
  if (stated && typeof stated === 'object' && PREFIX in stated) return typeof actual === 'string' && actual.startsWith((stated as Record<symbol, string>)[PREFIX]!)
  if (Array.isArray(stated)) {
    const rest = stated[stated.length - 1] === REST
    const items = rest ? stated.slice(0, -1) : stated
    if (!Array.isArray(actual) || (rest ? actual.length < items.length : actual.length !== items.length)) return false
    return items.every((s, i) => matches(actual[i], s))
  }
  if (stated && typeof stated === 'object') {
    return Boolean(actual) && typeof actual === 'object' && Object.entries(stated).every(([k, v]) => matches((actual as Record<string, unknown>)[k], v))
  }
  return Object.is(actual, stated)
}

/** The block with each `expression // value` line turned into a check; returns the code and how many checks. */
function withChecks(code: string): { code: string; checks: number } {
  let checks = 0
  const lines = code.split('\n').map((line) => {
    const m = /^(?!\s)(.+?)\s+\/\/ (.+)$/.exec(line)
    if (!m || /^(const|let|await|import|export|if|return)\b/.test(m[1]!)) return line
    if (!statedValue(m[2]!).ok) return line
    checks++
    return `__readmeCheck(${m[1]}, ${JSON.stringify(m[2])}, ${JSON.stringify(m[1])})`
  })
  return { code: lines.join('\n'), checks }
}

const failures: string[] = []
;(globalThis as Record<string, unknown>).__readmeCheck = (actual: unknown, comment: string, expr: string) => {
  const stated = statedValue(comment)
  if (stated.ok && !matches(actual, stated.value)) failures.push(`${expr} is ${JSON.stringify(actual)}, the document says ${comment}`)
}

/** Runs a ts block as a module (imports of riskcheck go to the test-mode shim); returns its exports. */
async function runTs(block: Block): Promise<Record<string, unknown>> {
  const shim = join(ROOT, 'test', 'readme', 'riskcheck-shim.ts')
  const { code, checks } = withChecks(block.code)
  let source = code
    .replace(/from 'riskcheck'/g, `from ${JSON.stringify(shim)}`)
    .replace(/from 'riskcheck\/(scoring|server)'/g, (_m, sub: string) => `from ${JSON.stringify(join(ROOT, 'src', sub, 'index.ts'))}`)
    .replace(/from 'vitest'/g, `from ${JSON.stringify(join(ROOT, 'test', 'readme', 'vitest-shim.ts'))}`)
  // A copy of an example resolves its relative files where the example lives.
  if (block.example) source = source.replace(/\bimport\.meta\.url\b/g, JSON.stringify(pathToFileURL(block.example).href))
  const file = join(dir, `block-${block.doc.replace(/\W/g, '-')}-${block.line}.ts`)
  // Top-level constants are exported too, so the test can look at what the block computed.
  const names = [...block.code.matchAll(/^const (\w+) =/gm)].map((m) => m[1]!).filter((n) => !new RegExp(`export (const|function) ${n}\\b`).test(block.code))
  writeFileSync(file, `${source}\nexport const __checks = ${checks}\n${names.length > 0 ? `export { ${names.join(', ')} }\n` : ''}`)
  return (await import(file)) as Record<string, unknown>
}

describe('README and docs/ code blocks', () => {
  it('every block is ts, js, sh, yaml, console or text; every one but text runs here unless it says why not', () => {
    expect(DOCUMENTS).toEqual(expect.arrayContaining(['README.md', 'docs/scoring.md', 'docs/bulk.md', 'docs/service.md']))
    expect(ALL.length).toBeGreaterThan(8)
    for (const b of ALL) expect(['ts', 'js', 'sh', 'yaml', 'console', 'text'], b.where).toContain(b.lang)
    const registry = 'it installs from the npm registry: `npm run test:consumer` runs it'
    expect(ALL.filter((b) => b.notRun).map((b) => b.notRun)).toEqual([
      registry,
      registry,
      'it is the test run itself',
      'it needs a Redis: test/velocity-redis.test.ts runs the store on one',
      'test/velocity-walkthrough.test.ts runs it against a server of its own',
    ])
    expect(sh.map((b) => b.code.split('\n')[0]!.split(' ').slice(0, 4).join(' '))).toEqual(['npm install', 'npx riskcheck admin org', 'npm install'])
  })

  it.each(ts.map((b) => [b.where, b] as const))('the ts block at %s runs and its stated values hold', async (_line, block) => {
    failures.length = 0
    process.env.TWILIO_SID ??= `AC${'0'.repeat(32)}` // the block reads them; no request is made
    process.env.TWILIO_TOKEN ??= 'test-token'
    const { collected } = await import('./readme/vitest-shim.js')
    collected.length = 0
    const mod = await runTs(block)
    const { created } = await import('./readme/riskcheck-shim.js')
    try {
      expect(failures).toEqual([])
      // A test file: its cases run now (and it is one of the project's tests too: vitest includes examples/).
      if (/from 'vitest'/.test(block.code)) {
        expect(block.example, 'a test block is the copy of an examples/ test').not.toBeNull()
        expect(relative(ROOT, block.example!)).toMatch(/^examples\/.+\.test\.ts$/)
        expect(collected.length).toBeGreaterThan(0)
        for (const c of collected.splice(0)) await c.fn()
      }
      if (block.doc === 'README.md' && block.code.includes('rc.email(')) expect(mod.__checks).toBe(4)
      if (block.code.includes('createPolicy(')) expect(mod.__checks).toBe(3)
      if (typeof mod.handleSignup === 'function') {
        expect(await (mod.handleSignup as (f: object, ip: string) => Promise<{ status: number }>)({ email: 'deliverable@example.com' }, '192.0.2.1')).toMatchObject({ status: 201 })
      }
      if (typeof mod.isGenuineWebhook === 'function') {
        const secret = `whsec_${'k'.repeat(32)}`
        process.env.RISKCHECK_WHSEC = secret
        const body = '{"type":"ping"}'
        const ok = mod.isGenuineWebhook as (b: string, s: string | undefined) => boolean
        expect(ok(body, signWebhook(body, secret, Math.floor(Date.now() / 1000)))).toBe(true)
        expect(ok(body.replace('ping', 'pong'), signWebhook(body, secret, Math.floor(Date.now() / 1000)))).toBe(false)
        expect(ok(body, undefined)).toBe(false)
      }
      if (block.code.includes('rc.bulk.create')) {
        const page = mod.page as { data: Array<{ input: string; action: string }> }
        expect(page.data.map((r) => r.action)).toEqual(['block', 'block'])
        expect((mod.job as { unique_inputs: number }).unique_inputs).toBe(3)
        expect(String(mod.csv).split('\n')[0]).toMatch(/^input,action,status,reason,risk_score/)
      }
    } finally {
      for (const rc of created.splice(0)) await rc.close()
    }
  })
})

describe('README CommonJS blocks', () => {
  it.each(js.map((b) => [b.where, b] as const))('the js block at %s runs as CommonJS against the built package and prints what it states', (_line, block) => {
    const project = mkdtempSync(join(dir, 'cjs-'))
    writeFileSync(join(project, 'package.json'), '{ "private": true }\n') // CommonJS, as `npm init -y` makes it
    mkdirSync(join(project, 'node_modules'))
    symlinkSync(ROOT, join(project, 'node_modules', 'riskcheck'), 'dir')
    writeFileSync(join(project, 'block.js'), block.code)
    const stated = [...block.code.matchAll(/^\s*console\.log\(.+\)\s*\/\/ (.+)$/gm)].map((m) => statedValue(m[1]!))
    expect(stated.length).toBeGreaterThan(0)
    const out = execFileSync(process.execPath, ['--require', join(ROOT, 'test', 'readme', 'riskcheck-shim.cjs'), 'block.js'], { cwd: project, encoding: 'utf8', timeout: 60_000 })
    expect(out.trimEnd().split('\n')).toEqual(stated.map((v) => (v.ok ? String(v.value) : '?')))
  }, 90_000)
})

describe('README policy and synopsis blocks', () => {
  it.each(yaml.map((b) => [b.where, b] as const))('the yaml block at %s is a valid policy file, without warnings', async (_line, block) => {
    const file = await parsePolicy(block.code, { format: 'yaml' })
    expect(file.warnings).toEqual([])
    expect(Object.keys(file.overrides).length).toBeGreaterThan(0)
  })

  /** Runs the CLI in-process; stdout and stderr together, as a terminal shows them. */
  async function cli(args: string[]): Promise<{ code: number; output: string }> {
    let output = ''
    const out = new PassThrough()
    out.on('data', (d: Buffer) => (output += d.toString()))
    const code = await runCli(args, { stdin: new PassThrough(), stdout: out, stderr: out, env: {} })
    return { code, output }
  }

  it.each(transcripts.map((b) => [b.where, b] as const))('the transcript at %s is what the commands print', async (_line, block) => {
    const steps: Array<{ command: string; expected: string[] }> = []
    for (const line of block.code.split('\n')) {
      if (line.startsWith('$ ')) steps.push({ command: line.slice(2), expected: [] })
      else steps.at(-1)!.expected.push(line.trimEnd())
    }
    expect(steps.length).toBeGreaterThan(0)
    const work = mkdtempSync(join(dir, 'transcript-'))
    cpSync(join(ROOT, 'examples', 'policy'), work, { recursive: true })
    const home = process.cwd()
    process.chdir(work)
    try {
      for (const { command, expected } of steps) {
        const exit = /#\s*exit (\d+)/.exec(command)
        const words = command.replace(/\s+#\s.*$/, '').split(/\s+/)
        expect(words[0]).toBe('riskcheck')
        const { code, output } = await cli(words.slice(1))
        expect(code, command).toBe(exit ? Number(exit[1]) : 0)
        const got = output.split('\n').map((l) => l.trimEnd())
        const shown = expected.filter((l) => l.trim() !== '…')
        while (shown.at(-1) === '') shown.pop()
        while (got.at(-1) === '') got.pop()
        if (!expected.some((l) => l.trim() === '…')) {
          expect(got, command).toEqual(shown)
        } else {
          // With lines left out: the lines shown appear in this order.
          let at = 0
          for (const l of shown) {
            if (l === '') continue
            const i = got.indexOf(l, at)
            expect(i, `${command}: "${l}" in order in\n${got.join('\n')}`).toBeGreaterThanOrEqual(0)
            at = i + 1
          }
        }
      }
    } finally {
      process.chdir(home)
    }
  })

  /** The `riskcheck …` command lines of the text blocks (after any `VAR=value` prefix), `<…>` placeholders left out. */
  const synopses = text.flatMap((b) =>
    b.code
      .split('\n')
      .map((l) => l.replace(/\s+#\s.*$/, '').replace(/^(?:[A-Z_]+=\S+\s+)+/, ''))
      .filter((l) => /^riskcheck [a-z]/.test(l))
      .map((l) => [b.where, l] as const),
  )

  it('the text blocks hold riskcheck command lines', () => {
    expect(synopses.length).toBeGreaterThan(5)
  })

  it.each(synopses)('%s: %s names a real command and only flags its --help lists', async (_line, l) => {
    const words = l.split(/\s+/)
    // `riskcheck data update …`: the sub-command is the second word when the command has sub-commands.
    const sub = words[1] === 'data' || words[1] === 'policy' || words[1] === 'admin' ? words.slice(1, 3) : words.slice(1, 2)
    const { code, output: help } = await cli([...sub, '--help'])
    expect(code, `riskcheck ${sub.join(' ')} --help`).toBe(0)
    for (const flag of l.match(/--[a-z][a-z-]*/g) ?? []) expect(help, `riskcheck ${sub.join(' ')} --help lists ${flag}`).toContain(flag)
  })
})

/** A free loopback port. */
async function freePort(): Promise<number> {
  const s = net.createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  const port = (s.address() as net.AddressInfo).port
  await new Promise((r) => s.close(r))
  return port
}

const npmEnv = { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }

describe('README shell blocks (loopback only)', () => {
  it('set-up: after `npm install` (done: it set up this test run), the check command answers (here --offline)', () => {
    const block = sh.find((b) => b.code.startsWith('npm install'))!
    const command = block.code.split('\n')[1]!
    expect(command).toMatch(/^npx riskcheck check /)
    const args = [...command.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1)
    const out = execFileSync('npx', [...args, '--offline', '--compact'], { cwd: ROOT, env: npmEnv, encoding: 'utf8', timeout: 60_000 })
    const r = JSON.parse(out)
    expect(r.details.email.did_you_mean).toBe('jane@gmail.com')
    expect(r.details.phone.country.code).toBe('GB')
    expect(['approve', 'verify', 'review', 'block']).toContain(r.recommendation.action)
  }, 90_000)

  it('the server walk-through: an org, a live key, serve, and a lookup with curl', async () => {
    const block = sh.find((b) => b.code.startsWith('npx riskcheck admin org create'))!
    const lines = block.code.split('\n').map((l) => l.replace(/\s+# .*$/, ''))
    const port = await freePort()
    const env = { ...npmEnv, RISKCHECK_DB: join(dir, 'walk.sqlite'), RISKCHECK_OFFLINE: '1', RISKCHECK_LOG_LEVEL: 'silent' }
    const bash = (line: string) => execFileSync('bash', ['-c', line], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 })
    const org = /org_[A-Za-z0-9]+/.exec(bash(lines[0]!))![0]
    const key = /svc_live_[A-Za-z0-9]+/.exec(bash(lines[1]!.replace('org_…', org)))![0]
    expect(lines[2]).toBe('npx riskcheck serve --port 8080')
    const server = spawn('bash', ['-c', `exec ${lines[2]!.replace('8080', String(port))}`], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      await new Promise<void>((resolve, reject) => {
        server.stdout!.on('data', (d: Buffer) => d.toString().includes('listening on') && resolve())
        server.on('exit', (code) => reject(new Error(`serve exited ${code}`)))
      })
      const answer = JSON.parse(bash(lines[3]!.replace('8080', String(port)).replace('svc_live_…', key)))
      expect(answer).toMatchObject({ success: true, data: { request: { type: 'ip', input: '8.8.8.8' }, metadata: { credits_used: 1 } } })
    } finally {
      server.kill('SIGTERM')
      await new Promise((r) => server.on('exit', r))
    }
  }, 120_000)

  it('the dashboard set-up: serve with a mail relay, and /dashboard answers with its sign-in page', async () => {
    const block = sh.find((b) => b.code.startsWith('npm install\nnpx riskcheck serve --mail-url'))!
    const line = block.code.split('\n')[1]!.replace(/\s+# .*$/, '')
    expect(line).toBe('npx riskcheck serve --mail-url smtp://127.0.0.1:1025')
    const port = await freePort()
    const env = { ...npmEnv, RISKCHECK_DB: join(dir, 'dashboard.sqlite'), RISKCHECK_OFFLINE: '1', RISKCHECK_LOG_LEVEL: 'silent', RISKCHECK_PORT: String(port) }
    const server = spawn('bash', ['-c', `exec ${line}`], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      await new Promise<void>((resolve, reject) => {
        server.stdout!.on('data', (d: Buffer) => d.toString().includes('listening on') && resolve())
        server.on('exit', (code) => reject(new Error(`serve exited ${code}`)))
      })
      const res = await fetch(`http://127.0.0.1:${port}/dashboard`)
      expect(res.url).toMatch(/\/dashboard\/signin$/)
      expect(await res.text()).toContain('<h1>Sign in</h1>')
    } finally {
      server.kill('SIGTERM')
      await new Promise((r) => server.on('exit', r))
    }
  }, 120_000)
})
