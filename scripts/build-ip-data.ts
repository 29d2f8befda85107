/**
 * Compiles the open IP range lists (see scripts/lib/ip-lists.ts) into the bundled flag data of the IP lookup:
 *
 * - `data/ip/flags.mmdb` — an IPv6 MMDB (IPv4 at ::/96, aliased at ::ffff:0:0/96 and 2002::/16) whose records are
 *   `{ is_datacenter?, is_cloud?, cloud_provider?, is_vpn?, vpn_provider?, is_tor? }` (only `true` flags stored);
 *   database_type `riskcheck-ip-flags`.
 * - `data/ip/asn-flags.json` — hosting ASNs (→ is_datacenter) and single-company VPN ASNs (→ is_vpn + provider),
 *   applied at lookup time to the address's ASN.
 *
 * Usage:
 *   npx tsx scripts/build-ip-data.ts [--from DIR] [--out DIR] [--epoch YYYY-MM-DD]
 *     --from   list directory in the layout of ../shared/fixtures/ip-lists (default .cache/ip-lists, which
 *              scripts/refresh-ip-lists.ts fills)
 *     --out    output directory (default data/ip)
 *     --epoch  build date written into the MMDB metadata (default: `fetchedAt` of DIR/manifest.json, else today)
 *
 * The result is read back with the `maxmind` reader and spot-checked (the first network of every list must answer
 * with its flag) before anything is written.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Reader } from 'maxmind'
import { parseCidr, formatIpv4, formatIpv6Words } from '../src/sources/ip/parse.js'
import { MmdbWriter, type MmdbMap } from './lib/mmdb-writer.js'
import { IP_LISTS, readListLines, VPN_ASN_PROVIDERS, type ListFile } from './lib/ip-lists.js'

/** The flags database's `database_type`. */
export const FLAGS_DATABASE_TYPE = 'riskcheck-ip-flags'

/** What {@link buildIpData} produced. */
export interface BuildIpDataResult {
  mmdb: Buffer
  asnFlags: { hosting: number[]; vpn: Record<string, string> }
  stats: { file: string; networks: number; skipped: number }[]
  missing: string[]
}

function recordFor(file: ListFile): MmdbMap | null {
  const r = file.role
  switch (r.kind) {
    case 'datacenter':
      return { is_datacenter: true }
    case 'cloud':
      return { is_datacenter: true, is_cloud: true, cloud_provider: r.provider }
    case 'vpn':
      return r.provider ? { is_vpn: true, vpn_provider: r.provider } : { is_vpn: true }
    case 'tor':
      return { is_tor: true }
    default:
      return null
  }
}

/**
 * Tor exits: X4BNet's generic VPN list includes the whole "Tor Servers" ASN (AS60729), so an exit would also read as
 * a VPN; a Tor exit is reported as Tor only, unless a provider-specific list names a VPN on the same address.
 */
const mergeTor = (existing: MmdbMap | null, inserted: MmdbMap): MmdbMap => {
  const out: MmdbMap = { ...(existing ?? {}), ...inserted }
  if (out['is_vpn'] === true && out['vpn_provider'] === undefined) delete out['is_vpn']
  return out
}

function parseAsnLines(text: string): number[] {
  const out: number[] = []
  for (const token of readListLines(text)) {
    const m = /^AS(\d{1,10})$/i.exec(token)
    if (m && m[1]) out.push(Number(m[1]))
  }
  return out
}

/**
 * Builds the flag data from a list directory. Throws when a required list is missing or a list has no usable line.
 */
export function buildIpData(fromDir: string, buildEpoch: number): BuildIpDataResult {
  const writer = new MmdbWriter({
    ipVersion: 6,
    databaseType: FLAGS_DATABASE_TYPE,
    languages: ['en'],
    description: {
      en: 'riskcheck IP flags: datacenter/cloud (X4BNet lists_vpn MIT, lord-alfred ipranges CC0), VPN (X4BNet, lord-alfred), Tor exits (SecOps-Institute MIT)',
    },
    buildEpoch,
  })
  const stats: BuildIpDataResult['stats'] = []
  const missing: string[] = []
  let hosting: number[] = []
  const vpn: Record<string, string> = {}
  const probes: { ip: string; expect: MmdbMap; file: string }[] = []

  for (const file of IP_LISTS) {
    const path = join(fromDir, file.path)
    if (!existsSync(path)) {
      if (file.required) throw new Error(`build-ip-data: required list missing: ${path}`)
      missing.push(file.path)
      continue
    }
    const text = readFileSync(path, 'utf8')
    if (file.role.kind === 'hosting-asns') {
      hosting = [...new Set(parseAsnLines(text))].sort((a, b) => a - b)
      stats.push({ file: file.path, networks: hosting.length, skipped: 0 })
      continue
    }
    if (file.role.kind === 'vpn-asns') {
      const asns = parseAsnLines(text)
      for (const asn of asns) {
        const name = VPN_ASN_PROVIDERS[asn]
        if (name) vpn[String(asn)] = name
      }
      stats.push({ file: file.path, networks: asns.length, skipped: 0 })
      continue
    }
    const rec = recordFor(file) as MmdbMap
    let networks = 0
    let skipped = 0
    for (const token of readListLines(text)) {
      const cidr = parseCidr(token)
      if (!cidr) {
        skipped++
        continue
      }
      writer.insert(cidr, rec, file.role.kind === 'tor' ? { merge: mergeTor } : {})
      if (networks === 0) {
        probes.push({ ip: cidr.version === 4 ? formatIpv4(cidr.first) : formatIpv6Words(cidr.first), expect: rec, file: file.path })
      }
      networks++
    }
    if (networks === 0 && file.required) throw new Error(`build-ip-data: no usable network in ${path}`)
    stats.push({ file: file.path, networks, skipped })
  }

  const mmdb = writer.toBuffer()
  // read back and spot-check
  const reader = new Reader<Record<string, unknown>>(mmdb)
  if (reader.metadata.databaseType !== FLAGS_DATABASE_TYPE) throw new Error('build-ip-data: metadata check failed')
  for (const p of probes) {
    const got = reader.get(p.ip)
    for (const [k, v] of Object.entries(p.expect)) {
      if (typeof v === 'boolean' && got?.[k] !== true)
        throw new Error(`build-ip-data: read-back check failed for ${p.ip} (${p.file}): ${k} missing in ${JSON.stringify(got)}`)
    }
  }
  return { mmdb, asnFlags: { hosting, vpn }, stats, missing }
}

/** Writes `flags.mmdb` and `asn-flags.json` of a build into `dir`. */
export function writeIpData(dir: string, result: BuildIpDataResult, builtOn: Date): void {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'flags.mmdb'), result.mmdb)
  const json = { built: builtOn.toISOString().slice(0, 10), hosting: result.asnFlags.hosting, vpn: result.asnFlags.vpn }
  writeFileSync(join(dir, 'asn-flags.json'), `${JSON.stringify(json)}\n`)
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

function main(): void {
  const from = resolve(arg('--from') ?? '.cache/ip-lists')
  const out = resolve(arg('--out') ?? 'data/ip')
  let epochText = arg('--epoch')
  const manifestPath = join(from, 'manifest.json')
  if (!epochText && existsSync(manifestPath)) {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { fetchedAt?: string }
    epochText = manifest.fetchedAt
  }
  const epochMs = epochText ? Date.parse(epochText) : Date.now()
  if (!Number.isFinite(epochMs)) throw new Error(`build-ip-data: bad --epoch ${epochText}`)
  if (!existsSync(from)) {
    console.error(`build-ip-data: list directory not found: ${from}\nRun scripts/refresh-ip-lists.ts first, or pass --from DIR.`)
    process.exit(1)
  }
  const t0 = performance.now()
  const result = buildIpData(from, Math.floor(epochMs / 1000))
  writeIpData(out, result, new Date(epochMs))
  for (const s of result.stats) console.log(`${String(s.networks).padStart(7)}  ${s.file}${s.skipped ? `  (${s.skipped} lines skipped)` : ''}`)
  if (result.missing.length) console.log(`optional lists not present: ${result.missing.join(', ')}`)
  const meta = new Reader(result.mmdb).metadata
  console.log(
    `wrote ${join(out, 'flags.mmdb')}: ${(result.mmdb.length / 1e6).toFixed(2)} MB, ${meta.nodeCount} nodes, ${meta.recordSize}-bit records; ` +
      `asn-flags.json: ${result.asnFlags.hosting.length} hosting ASNs, ${Object.keys(result.asnFlags.vpn).length} VPN ASNs (${(performance.now() - t0).toFixed(0)} ms)`,
  )
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) main()
