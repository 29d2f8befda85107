/**
 * Compiles the open IP range lists (./ip-lists.ts) into the IP lookup's flag data: `flags.mmdb` (an IPv6 MMDB of `true`
 * flags, database_type `riskcheck-ip-flags`) and `asn-flags.json` (hosting and single-company VPN ASNs, applied to the
 * address's ASN). Used by `riskcheck data update` and scripts/build-ip-data.ts. Reproducible (same lists and epoch,
 * same bytes); read back and spot-checked before use.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Reader } from 'maxmind'
import { formatIpv4, formatIpv6Words, parseCidr } from '../sources/ip/parse.js'
import { BUNDLED_TOR_LIST, IP_LIST_SOURCES, IP_LISTS, readListLines, VPN_ASN_PROVIDERS, type ListFile } from './ip-lists.js'
import { MmdbWriter, type MmdbMap } from './mmdb-writer.js'

/** The flags database's `database_type`. */
export const FLAGS_DATABASE_TYPE = 'riskcheck-ip-flags'

/** One list file to compile: its catalog entry and where its text is. */
export interface ListInput {
  file: ListFile
  /** absolute path of the file (a missing optional file is skipped) */
  path: string
}

/** The JSON of `asn-flags.json`. */
export interface AsnFlagsJson {
  built: string
  hosting: number[]
  vpn: Record<string, string>
}

/** What {@link buildIpFlags} produced. */
export interface BuildIpFlagsResult {
  mmdb: Buffer
  asnFlags: { hosting: number[]; vpn: Record<string, string> }
  stats: { file: string; networks: number; skipped: number }[]
  /** optional files that were not there */
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

/** The AS numbers of an ASN list (`AS9009 # M247` lines). */
export function parseAsnLines(text: string): number[] {
  const out: number[] = []
  for (const token of readListLines(text)) {
    const m = /^AS(\d{1,10})$/i.exec(token)
    if (m && m[1]) out.push(Number(m[1]))
  }
  return out
}

/**
 * How many usable entries a list file has for its role: networks (CIDRs, addresses) or AS numbers, and how many
 * data lines were not usable. Used to check a download (a list with none is refused) and its size against the
 * current set.
 */
export function countListEntries(text: string, file: ListFile): { entries: number; skipped: number } {
  const kind = file.role.kind
  if (kind === 'hosting-asns' || kind === 'vpn-asns') {
    const n = parseAsnLines(text).length
    return { entries: n, skipped: readListLines(text).length - n }
  }
  let entries = 0
  let skipped = 0
  for (const token of readListLines(text)) {
    if (parseCidr(token)) entries++
    else skipped++
  }
  return { entries, skipped }
}

/** Build order of a file: by source, then by its place in the catalog (the bundled Tor snapshot last). */
function orderOf(file: ListFile): number {
  const i = IP_LISTS.findIndex((f) => f.path === file.path)
  return IP_LIST_SOURCES.indexOf(file.source) * 1000 + (i >= 0 ? i : file === BUNDLED_TOR_LIST ? 999 : 998)
}

/** The inputs of `files` in the list directory `dir`. */
export function listInputsIn(dir: string, files: readonly ListFile[]): ListInput[] {
  return files.map((file) => ({ file, path: join(dir, file.path) }))
}

/**
 * Builds the flag data from list files. Throws when a required list is missing, a required list has no usable line,
 * or the read-back check fails.
 *
 * @example
 * const r = buildIpFlags(listInputsIn('data/ip/lists', [...listFilesOf('datacenter'), …]), Date.parse('2026-08-22') / 1000)
 */
export function buildIpFlags(inputs: readonly ListInput[], buildEpoch: number): BuildIpFlagsResult {
  const writer = new MmdbWriter({
    ipVersion: 6,
    databaseType: FLAGS_DATABASE_TYPE,
    languages: ['en'],
    description: {
      en: 'riskcheck IP flags: datacenter/cloud (X4BNet lists_vpn MIT, lord-alfred ipranges CC0), VPN (X4BNet, lord-alfred), Tor exits (SecOps-Institute MIT)',
    },
    buildEpoch,
  })
  const stats: BuildIpFlagsResult['stats'] = []
  const missing: string[] = []
  let hosting: number[] = []
  const vpn: Record<string, string> = {}
  const probes: { ip: string; expect: MmdbMap; file: string }[] = []
  const ordered = [...inputs].sort((a, b) => orderOf(a.file) - orderOf(b.file))

  for (const { file, path } of ordered) {
    if (!existsSync(path)) {
      if (file.required) throw new Error(`required list missing: ${path}`)
      missing.push(file.path)
      continue
    }
    const text = readFileSync(path, 'utf8')
    if (file.role.kind === 'hosting-asns') {
      hosting = [...new Set([...hosting, ...parseAsnLines(text)])].sort((a, b) => a - b)
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
    if (networks === 0 && file.required) throw new Error(`no usable network in ${path}`)
    stats.push({ file: file.path, networks, skipped })
  }

  const mmdb = writer.toBuffer()
  const reader = new Reader<Record<string, unknown>>(mmdb)
  if (reader.metadata.databaseType !== FLAGS_DATABASE_TYPE) throw new Error('flags database: metadata check failed')
  for (const p of probes) {
    const got = reader.get(p.ip)
    for (const [k, v] of Object.entries(p.expect)) {
      if (typeof v === 'boolean' && got?.[k] !== true)
        throw new Error(`flags database: read-back check failed for ${p.ip} (${p.file}): ${k} missing in ${JSON.stringify(got)}`)
    }
  }
  return { mmdb, asnFlags: { hosting, vpn }, stats, missing }
}

/** Writes `flags.mmdb` and `asn-flags.json` of a build into `dir`. */
export function writeIpFlags(dir: string, result: BuildIpFlagsResult, builtOn: Date): void {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'flags.mmdb'), result.mmdb)
  const json: AsnFlagsJson = { built: builtOn.toISOString().slice(0, 10), hosting: result.asnFlags.hosting, vpn: result.asnFlags.vpn }
  writeFileSync(join(dir, 'asn-flags.json'), `${JSON.stringify(json)}\n`)
}
