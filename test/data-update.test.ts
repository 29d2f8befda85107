/**
 * `riskcheck data update` against a loopback server playing the upstreams: a fresh Tor exit reaches new instances
 * and a running server without a restart; truncated, shrunken and corrupt downloads are refused while the data in use
 * keeps answering; published checksums are verified; crash points and rollback leave a usable directory.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../src/cli/main.js'
import { readPointer, readSetManifest, listSets, findSetFileProblem } from '../src/data/store.js'
import { rollbackData, updateData, type UpdateOptions, type UpdateStep } from '../src/data/update.js'
import { createRiskcheck } from '../src/index.js'
import { cityDb, startDataUpstream, torList, type DataUpstream } from './fake-internet/data-upstream.js'
import { startDnsServer } from './fake-internet/dns-server.js'
import { startTestServer } from './server-helpers.js'

const NEW_EXIT = '81.2.69.160' // London in the test city database; no Tor exit in the bundled data
const NOW = new Date('2026-11-23T06:12:00Z')
let upstream: DataUpstream
const dirs: string[] = []
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'riskcheck-data-'))
  dirs.push(d)
  return d
}

beforeAll(async () => {
  upstream = await startDataUpstream({ month: '2026-11', torExtra: [NEW_EXIT] })
})
afterAll(async () => {
  await upstream.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const update = (dataDir: string, o: Partial<UpdateOptions> = {}) =>
  updateData({ dataDir, now: () => NOW, sources: upstream.sources(), upstreams: upstream.upstreams(), sleep: async () => {}, ...o })

/** Files under `root`, relative, sorted; an empty directory counts as `dir/`. */
function filesUnder(root: string, prefix = ''): string[] {
  const entries = readdirSync(join(root, prefix), { withFileTypes: true })
  if (entries.length === 0 && prefix !== '') return [prefix]
  return entries.flatMap((e) => (e.isDirectory() ? filesUnder(root, `${prefix}${e.name}/`) : [`${prefix}${e.name}`])).sort()
}

/** Every installed set is complete and holds exactly what its manifest names, the pointer names one, no staging is left. */
function expectHealthyDirectory(dir: string): string {
  const id = readPointer(dir)
  expect(id).not.toBeNull()
  for (const s of listSets(dir)) {
    const m = readSetManifest(dir, s)
    expect(findSetFileProblem(dir, m), s).toBeNull()
    const named = [...Object.values(m.sources).flatMap((x) => x.files), ...m.built].map((f) => f.path)
    expect(filesUnder(join(dir, 'sets', s)), s).toEqual(['manifest.json', ...named].sort())
  }
  expect(existsSync(join(dir, 'staging')) ? readdirSync(join(dir, 'staging')) : []).toEqual([])
  expect(existsSync(join(dir, 'update.lock'))).toBe(false)
  return id as string
}

describe('a fresh Tor exit list', () => {
  let dir: string
  beforeAll(async () => {
    dir = newDir()
    const r = await update(dir, { only: ['tor'] })
    expect(r).toMatchObject({ ok: true, previous: null, failed: [] })
    expect(r.updated).toEqual([expect.objectContaining({ name: 'tor', version: '2026-11-23T06:12Z', entries: 1747, checksum: 'none' })])
  })

  it('makes rc.ip() of the new exit is_tor: true in a new instance, with the list version in data_sources', async () => {
    const before = createRiskcheck({ offline: true })
    const after = createRiskcheck({ offline: true, dataDir: dir })
    try {
      const old = await before.ip(NEW_EXIT)
      expect(old.details.flags.is_tor).toBe(false)
      expect(old.metadata.data_sources).toContain('tor-exits@2024-02-27')
      const fresh = await after.ip(NEW_EXIT)
      expect(fresh.details.flags.is_tor).toBe(true)
      expect(fresh.risk.factors).toContain('ip_tor')
      expect(fresh.metadata.data_sources).toEqual([
        'iana-special-purpose',
        'dbip-city-lite@2026-06',
        'ip-location-db-asn@2026-06-17',
        'datacenter-ranges@2026-08-22',
        'cloud-ranges@2026-08-22',
        'vpn-ranges@2026-08-22',
        'tor-exits@2026-11-23T06:12Z',
      ])
      // the other sources were carried from the bundled data: an AWS range still answers as before
      expect((await after.ip('52.94.76.10')).details.flags).toMatchObject({ is_cloud: true, cloud_provider: 'aws', is_tor: false })
    } finally {
      await before.close()
      await after.close()
    }
  })

  it('the set records where every source came from, with checksums of its files', () => {
    const m = readSetManifest(dir, readPointer(dir) as string)
    expect(m.sources.tor).toMatchObject({ origin: 'fetched', upstream: upstream.sources().tor, fetched_at: NOW.toISOString(), entries: 1747 })
    expect(m.sources.tor.files).toEqual([{ path: 'lists/torproject/torbulkexitlist', bytes: Buffer.byteLength(torList([NEW_EXIT])), sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }])
    // the flags were rebuilt from exact copies of the bundled VPN, datacenter and cloud lists
    for (const n of ['vpn', 'datacenter', 'cloud'] as const) expect(m.sources[n]).toMatchObject({ origin: 'bundled-copy', version: '2026-08-22' })
    expect(m.sources['dbip-city'].origin).toBe('bundled')
    expect(m.built.map((b) => b.path).sort()).toEqual(['ip/asn-flags.json', 'ip/flags.mmdb'])
  })

  it('a running server answers from the new set without a restart (its cached answer is not served)', async () => {
    const serverDir = newDir()
    // online, with reverse DNS from a loopback server: complete answers, so the first one is cached
    const dns = await startDnsServer({ zones: { '160.69.2.81.in-addr.arpa': { PTR: ['mail.example.net'] } } })
    const s = await startTestServer({
      riskcheck: { offline: false, dns: { servers: [dns.address], timeoutMs: 500, tries: 1 }, dataDir: serverDir, dataCheckIntervalMs: 20 },
    })
    try {
      const before = await s.post('/v1/ip', { ip: NEW_EXIT }, s.live)
      expect(before.status).toBe(200)
      expect(before.body.data.details.flags.is_tor).toBe(false)
      expect(before.body.data.partial).toBe(false)
      expect((await s.post('/v1/ip', { ip: NEW_EXIT }, s.live)).body.data.metadata.cache_hit).toBe(true)
      const r = await update(serverDir, { only: ['tor'] })
      expect(r.ok).toBe(true)
      // the server notices the new pointer on its own (20 ms checks); no reload call, no restart
      let answer = before
      for (let i = 0; i < 200 && !answer.body.data.details.flags.is_tor; i++) {
        await new Promise((res) => setTimeout(res, 10))
        answer = await s.post('/v1/ip', { ip: NEW_EXIT }, s.live)
      }
      expect(answer.status).toBe(200)
      expect(answer.body.data.details.flags.is_tor).toBe(true)
      expect(answer.body.data.metadata.cache_hit).toBe(false) // the answer cached before the update is not served
      expect(answer.body.data.metadata.data_sources).toContain('tor-exits@2026-11-23T06:12Z')
    } finally {
      await s.close()
      await dns.close()
    }
  })
})

describe('refused downloads keep the data in use', () => {
  let dir: string
  let installed: string
  beforeAll(async () => {
    dir = newDir()
    const r = await update(dir, { only: ['tor', 'dbip-city'] })
    expect(r.ok).toBe(true)
    installed = r.installed as string
  })
  afterEach(() => {
    upstream.set('/tor/torbulkexitlist', { body: torList([NEW_EXIT]) })
    upstream.set('/dbip/dbip-city-lite-2026-11.mmdb.gz', { body: gzipSync(cityDb()) })
  })

  const expectOldDataAnswers = async () => {
    expect(readPointer(dir)).toBe(installed)
    const rc = createRiskcheck({ offline: true, dataDir: dir })
    try {
      const r = await rc.ip(NEW_EXIT)
      expect(r.details.flags.is_tor).toBe(true)
      expect(r.details.location.city).toBe('London')
      expect(r.partial).toBe(false) // offline: reverse DNS not asked is not a failure, and no data source failed
      expect(r.risk.factors).not.toContain('ip_source_unavailable')
    } finally {
      await rc.close()
    }
    expectHealthyDirectory(dir)
  }

  it('a list that shrank to less than half is refused, naming the source and the reason', async () => {
    upstream.set('/tor/torbulkexitlist', { body: torList().split('\n').slice(0, 100).join('\n') })
    const r = await update(dir, { only: ['tor'] })
    expect(r).toMatchObject({ ok: false, installed: null, updated: [] })
    expect(r.failed).toEqual([{ name: 'tor', reason: expect.stringMatching(/^refused: 100 entries, less than half of the 1747 in the data in use/) }])
    await expectOldDataAnswers()
  })

  it('the first Tor list is not compared with the bundled snapshot (another list, with IPv6 exits)', async () => {
    const own = newDir()
    upstream.set('/tor/torbulkexitlist', { body: `${torList([NEW_EXIT]).trim().split('\n').slice(-101).join('\n')}\n` })
    const r = await update(own, { only: ['tor'] })
    expect(r.updated).toEqual([expect.objectContaining({ name: 'tor', entries: 101 })])
    // the next one is compared with it
    upstream.set('/tor/torbulkexitlist', { body: torList().split('\n').slice(0, 20).join('\n') })
    expect((await update(own, { only: ['tor'] })).failed).toEqual([{ name: 'tor', reason: expect.stringMatching(/^refused: 20 entries, less than half of the 101/) }])
  })

  it('a download cut short of its Content-Length is refused', async () => {
    const body = torList([NEW_EXIT])
    upstream.set('/tor/torbulkexitlist', { body, cutAt: Math.floor(body.length / 2) })
    const r = await update(dir, { only: ['tor'] })
    expect(r.ok).toBe(false)
    expect(r.failed[0]).toMatchObject({ name: 'tor', reason: expect.stringContaining(upstream.sources().tor) })
    await expectOldDataAnswers()
  })

  it('an HTML error page instead of a list is refused', async () => {
    upstream.set('/tor/torbulkexitlist', { body: '<html><body>Rate limited</body></html>\n' })
    const r = await update(dir, { only: ['tor'] })
    expect(r.failed).toEqual([{ name: 'tor', reason: expect.stringContaining('no usable line') }])
    await expectOldDataAnswers()
  })

  it.each([
    ['random bytes', () => gzipSync(Buffer.alloc(4096, 7)), /not a valid MaxMind DB file/],
    ['a truncated gzip stream', () => { const gz = gzipSync(cityDb()); return gz.subarray(0, gz.length >> 1) }, /corrupt gzip data/],
    ['a database whose node count does not fit the file', () => readFileSync(join(__dirname, 'fixtures/maxmind/GeoIP2-City-Test-Invalid-Node-Count.mmdb')), /corrupt MaxMind DB file|not a valid MaxMind DB/],
    ['an ASN database instead of a city database', () => readFileSync(join(__dirname, 'fixtures/maxmind/GeoLite2-ASN-Test.mmdb')), /expected a City/],
  ])('a corrupt city database (%s) is refused', async (_what, body, reason) => {
    upstream.set('/dbip/dbip-city-lite-2026-11.mmdb.gz', { body: body() })
    const r = await update(dir, { only: ['dbip-city'] })
    expect(r.installed).toBeNull()
    expect(r.failed).toEqual([{ name: 'dbip-city', reason: expect.stringMatching(reason) }])
    await expectOldDataAnswers()
  })

  it('a refused source leaves nothing behind in the installed set', async () => {
    upstream.set('/disposable/index.json', { body: '<html>maintenance</html>' })
    try {
      const own = newDir()
      const r = await update(own, { only: ['tor', 'disposable', 'vpn'], sources: { ...upstream.sources(), vpn: `${upstream.url}/nowhere/` } })
      expect(r.updated.map((u) => u.name)).toEqual(['tor'])
      expect(r.failed).toEqual([
        { name: 'vpn', reason: expect.stringMatching(/nowhere\/x4bnet-lists_vpn\/output\/vpn\/ipv4\.txt: HTTP 404$/) },
        { name: 'disposable', reason: expect.stringMatching(/index\.json: not a list of domains/) },
      ])
      expectHealthyDirectory(own)
    } finally {
      const { disposableLists } = await import('./fake-internet/data-upstream.js')
      upstream.set('/disposable/index.json', { body: disposableLists().index })
    }
  })

  it('with several sources, a refused one keeps its data while the others are installed; exit code 1 names it', async () => {
    upstream.set('/dbip/dbip-city-lite-2026-11.mmdb.gz', { body: gzipSync(Buffer.from('garbage')) })
    const out: string[] = []
    const err: string[] = []
    const io = { stdin: process.stdin, stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) }, env: {} } as never
    const own = newDir()
    const s = upstream.sources()
    const code = await runCli(['data', 'update', '--data-dir', own, '--only', 'tor,dbip-city', '--source', `tor=${s.tor}`, '--source', `dbip-city=${s['dbip-city']}`, '--json'], io)
    expect(code).toBe(1)
    const result = JSON.parse(out.join(''))
    expect(result).toMatchObject({ ok: false, updated: [expect.objectContaining({ name: 'tor' })], failed: [{ name: 'dbip-city' }] })
    expect(err.join('')).toMatch(/dbip-city: .*not a valid MaxMind DB file/)
    const m = readSetManifest(own, result.installed)
    expect(m.sources['dbip-city'].origin).toBe('bundled')
    expect(m.sources.tor.origin).toBe('fetched')
  })
})

describe('upstream formats', () => {
  it('ASN tables: the checksums jsDelivr publishes are verified; a mismatch is refused', async () => {
    const dir = newDir()
    const r = await update(dir, { only: ['asn'], sources: {}, force: true })
    expect(r.updated).toEqual([expect.objectContaining({ name: 'asn', version: '2026-11-22', checksum: 'verified', entries: 2 })])
    expect(upstream.requests).toContain('/api/@ip-location-db/asn/resolved?specifier=latest')
    const rc = createRiskcheck({ offline: true, dataDir: dir })
    const a = await rc.ip(NEW_EXIT)
    expect(a.details.network).toMatchObject({ asn: 64501, as_name: 'Example Transit, Inc.' })
    expect(a.metadata.data_sources).toContain('ip-location-db-asn@2026-11-22')
    await rc.close()

    upstream.set('/cdn/@ip-location-db/asn@2.3.2026112206/asn-ipv4-num.csv', { body: '1,2,3,tampered\n' })
    const bad = await update(dir, { only: ['asn'], sources: {}, force: true })
    expect(bad.failed).toEqual([{ name: 'asn', reason: expect.stringContaining('checksum mismatch') }])
    expect(readPointer(dir)).toBe(r.installed)
  })

  it('DB-IP: takes the previous month while the current one is not published yet', async () => {
    const dir = newDir()
    const up = await startDataUpstream({ month: '2026-10' })
    try {
      const r = await updateData({ dataDir: dir, now: () => NOW, only: ['dbip-city'], upstreams: up.upstreams(), sleep: async () => {} })
      expect(r.updated).toEqual([expect.objectContaining({ name: 'dbip-city', version: '2026-10' })])
      expect(r.updated[0]?.notes[0]).toMatch(/2026-11\.mmdb\.gz not published yet/)
    } finally {
      await up.close()
    }
  })

  it('disposable domains: a new domain is disposable and no longer a free provider; the list version is in data_sources', async () => {
    const dir = newDir()
    const { disposableLists } = await import('./fake-internet/data-upstream.js')
    const lists = disposableLists(['quickdrop-inbox.net', 'gmx.com'])
    upstream.set('/disposable/index.json', { body: lists.index })
    try {
      const r = await update(dir, { only: ['disposable'], sources: {} })
      expect(r.ok).toBe(true)
      const rc = createRiskcheck({ offline: true, dataDir: dir })
      const e = await rc.email('jane@quickdrop-inbox.net')
      expect(e.details.is_disposable).toBe(true)
      expect(e.metadata.data_sources).toEqual(['syntax', 'lists', 'disposable-email-domains@2026-11-23'])
      const g = await rc.email('jane@gmx.com')
      expect(g.details).toMatchObject({ is_disposable: true, is_free_provider: false })
      await rc.close()
      const bundled = createRiskcheck({ offline: true })
      expect((await bundled.email('jane@gmx.com')).details).toMatchObject({ is_disposable: false, is_free_provider: true })
      await bundled.close()
    } finally {
      upstream.set('/disposable/index.json', { body: disposableLists().index })
    }
  })

  it('a local file and a local directory work as --source (private networks)', async () => {
    const dir = newDir()
    const file = join(newDir(), 'exits.txt')
    writeFileSync(file, `ExitNode 0011BD2485AD45D984EC4159C88FC066E5E3300E\nPublished 2026-11-23 05:00:00\nExitAddress ${NEW_EXIT} 2026-11-23 05:10:00\n` + torList())
    const lists = join(__dirname, '..', 'data', 'ip', 'lists')
    const r = await updateData({ dataDir: dir, now: () => NOW, only: ['tor', 'vpn'], sources: { tor: file, vpn: lists } })
    expect(r.updated.map((u) => [u.name, u.upstream])).toEqual([
      ['tor', file],
      ['vpn', lists],
    ])
    const rc = createRiskcheck({ offline: true, dataDir: dir })
    expect((await rc.ip(NEW_EXIT)).details.flags.is_tor).toBe(true)
    await rc.close()
  })
})

describe('crash points and rollback', () => {
  it.each<UpdateStep>(['fetched', 'built', 'manifest-written', 'installed'])('an update stopped after "%s" leaves a usable directory; the next one succeeds', async (stop) => {
    const dir = newDir()
    const first = await update(dir, { only: ['tor'] })
    await expect(
      update(dir, {
        only: ['tor'],
        onStep: (s) => {
          if (s === stop) throw new Error(`crash after ${s}`)
        },
      }),
    ).rejects.toThrow(`crash after ${stop}`)
    const id = expectHealthyDirectory(dir)
    // before the rename nothing changed; after it the new set is complete and in force
    if (stop === 'installed') expect(id).not.toBe(first.installed)
    else expect(id).toBe(first.installed)
    const next = await update(dir, { only: ['tor'] })
    expect(next.ok).toBe(true)
    expect(expectHealthyDirectory(dir)).toBe(next.installed)
  })

  it('rollback points back at the previous set; old sets beyond three are removed', async () => {
    const dir = newDir()
    const ids: string[] = []
    for (let i = 0; i < 4; i++) {
      const r = await updateData({ dataDir: dir, now: () => new Date(NOW.getTime() + i * 60_000), only: ['tor'], sources: upstream.sources(), sleep: async () => {} })
      ids.push(r.installed as string)
      if (i === 3) expect(r.pruned).toEqual([ids[0]])
    }
    expect(listSets(dir)).toEqual(ids.slice(1))
    const rb = await rollbackData({ dataDir: dir })
    expect(rb).toEqual({ set: ids[2], previous: ids[3] })
    expect(readPointer(dir)).toBe(ids[2])
  })
})
