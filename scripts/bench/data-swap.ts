/**
 * Data directory benchmark, in one run, on full-size data (the bundled DB-IP IPv4 city file, ASN tables and range
 * lists, installed as data sets from local files — no network):
 *
 * - update:  `updateData` of the range lists (flags rebuild) and of every source, vs copying the same files raw
 * - lookups: `rc.ip()` (offline, no cache) with the bundled data, with a data directory, and with a data directory
 *            while the instance switches between two sets every 250 ms — rates and ratios; every answer is checked
 *            to come from one set (its tor-exits version matches its is_tor)
 * - reload:  `rc.reloadData()` to a set with the same parts loaded vs loading those files raw (readFile + maxmind
 *            Reader + the ASN table parser) — the cost of loading a set completely before it is used
 *
 *   npx tsx --expose-gc scripts/bench/data-swap.ts [--count N]
 */
import { copyFileSync, mkdirSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Reader } from 'maxmind'
import { updateData } from '../../src/data/update.js'
import { switchPointer } from '../../src/data/store.js'
import { createRiskcheck } from '../../src/riskcheck.js'
import { loadAsnNumCsv } from '../../src/sources/ip/asn.js'
import { getDefaultIpDataPaths } from '../../src/sources/ip/data-paths.js'
import { formatIpv4 } from '../../src/sources/ip/parse.js'
import { xorshift } from '../../test/xorshift.js'

const i = process.argv.indexOf('--count')
const COUNT = i >= 0 ? Number(process.argv[i + 1]) : 200_000
const TMP = join(process.cwd(), '.bench-tmp', 'data-swap')
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const mb = (n: number) => `${(n / 1048576).toFixed(0)} MB`
const gc = () => (globalThis as { gc?: () => void }).gc?.()
const p = getDefaultIpDataPaths()
const TOR_A = join(p.lists, 'secops-tor-ip-addresses', 'tor-exit-nodes.lst')

function addresses(n: number): string[] {
  const next = xorshift(12345)
  const out: string[] = []
  while (out.length < n) {
    const s = next()
    const first = s >>> 24
    if (first === 0 || first === 10 || first === 127 || first >= 224) continue
    out.push(formatIpv4(s))
  }
  return out
}

async function time<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now()
  const value = await fn()
  return { ms: performance.now() - t0, value }
}

async function main(): Promise<void> {
  rmSync(TMP, { recursive: true, force: true })
  mkdirSync(TMP, { recursive: true })
  const dir = join(TMP, 'dir')
  const local = { tor: TOR_A, vpn: p.lists, datacenter: p.lists, cloud: p.lists, 'dbip-city': p.cityV4, asn: join(p.asnV4, '..'), disposable: join(p.lists, '..', '..', '..', 'node_modules', 'disposable-email-domains') }

  // ── update ──
  const all = await time(() => updateData({ dataDir: dir, sources: local, now: () => new Date('2026-11-23T06:00:00Z') }))
  const raw = await time(async () => {
    for (const f of [p.cityV4, p.asnV4, p.asnV6]) copyFileSync(f, join(TMP, `raw-${f.split('/').pop()}`))
  })
  const lists = await time(() => updateData({ dataDir: dir, only: ['tor'], sources: { tor: TOR_A }, now: () => new Date('2026-11-23T07:00:00Z') }))
  const setA = all.value.installed as string
  const setB = lists.value.installed as string
  console.log(`update, every source from local files: ${fmt(all.ms)} ms (a raw copy of the big files: ${fmt(raw.ms)} ms, ${(all.ms / raw.ms).toFixed(1)}×; the rest is checking: city structure scan, ASN parse, flags build)`)
  console.log(`update, tor only (flags rebuilt, other sources hard-linked): ${fmt(lists.ms)} ms`)

  // ── lookups ──
  const ips = addresses(COUNT)
  const run = async (label: string, rc: ReturnType<typeof createRiskcheck>, swap: boolean) => {
    for (const a of ips.slice(0, 2000)) await rc.ip(a)
    gc()
    let swaps = 0
    let next = setA
    const timer = swap
      ? setInterval(() => {
          switchPointer(dir, next)
          next = next === setA ? setB : setA
          swaps++
          void rc.reloadData()
        }, 250)
      : undefined
    const seen = new Map<string, number>()
    const c0 = process.cpuUsage()
    for (let k = 0; k < ips.length; k++) {
      if (k % 1000 === 0) await new Promise((r) => setImmediate(r)) // let timers (the switches) run
      const r = await rc.ip(ips[k] as string)
      const tor = r.metadata.data_sources.find((s) => s.startsWith('tor-exits@')) ?? 'special-purpose (no data)'
      seen.set(tor, (seen.get(tor) ?? 0) + 1)
    }
    const c = process.cpuUsage(c0)
    if (timer) clearInterval(timer)
    const rate = COUNT / ((c.user + c.system) / 1e6)
    console.log(`${label}: ${fmt(rate)} lookups per CPU-second${swap ? ` (${swaps} switches; answers per tor list version: ${[...seen].map(([k, v]) => `${k} ${fmt(v)}`).join(', ')})` : ''}`)
    return rate
  }
  const bundled = createRiskcheck({ offline: true, cache: false })
  switchPointer(dir, setA)
  const withDir = createRiskcheck({ offline: true, cache: false, dataDir: dir, dataCheckIntervalMs: 0 })
  // alternating, best of two each: the machine may be shared
  let base = 0
  let d = 0
  for (let round = 0; round < 2; round++) {
    base = Math.max(base, await run('rc.ip(), bundled data', bundled, false))
    d = Math.max(d, await run('rc.ip(), data directory', withDir, false))
  }
  await bundled.close()
  const s = await run('rc.ip(), data directory, switching sets every 250 ms', withDir, true)
  console.log(`ratios (best of each): data directory / bundled ${(d / base).toFixed(2)}×; while switching / not switching ${(s / d).toFixed(2)}×`)

  // ── reload ──
  switchPointer(dir, setA)
  await withDir.reloadData()
  for (const a of ips.slice(0, 1000)) await withDir.ip(a)
  const setC = (await updateData({ dataDir: dir, only: ['tor'], sources: { tor: TOR_A }, now: () => new Date('2026-11-23T08:00:00Z') })).installed as string
  gc()
  const rss0 = process.memoryUsage().rss
  const reload = await time(() => withDir.reloadData())
  const rss1 = process.memoryUsage().rss
  const rawLoad = await time(async () => {
    const city = await readFile(join(dir, 'sets', setC, 'ip', 'dbip-city-lite.mmdb'))
    new Reader(city).get('8.8.8.8')
    loadAsnNumCsv(await readFile(join(dir, 'sets', setC, 'ip', 'asn-ipv4-num.csv')), 1)
    const flags = await readFile(join(dir, 'sets', setC, 'ip', 'flags.mmdb'))
    new Reader(flags).get('8.8.8.8')
  })
  console.log(
    `reload to a new set after a tor-only update: ${fmt(reload.ms)} ms (${JSON.stringify(reload.value)}; only the changed flags are loaded — the unchanged city and ASN files are shared by content); ` +
      `loading all three raw (readFile + Reader + ASN parse): ${fmt(rawLoad.ms)} ms; RSS ${mb(rss0)} → ${mb(rss1)} right after the switch`,
  )
  await withDir.close()
  rmSync(TMP, { recursive: true, force: true })
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
