/**
 * The open IP data of one data set — DB-IP city (IPv4 and IPv6 trees, or one file for both), the ASN tables and
 * riskcheck's compiled flags — as lazily loaded parts. A part loads on the first lookup that needs it (or ahead of
 * time with `preload`) and is shared, by file path, by every source in the process that uses the same file, so many
 * instances (tests, bulk workers) load it once. Parts of a data set that is replaced are dropped from the shared
 * cache when the last holder releases them.
 */
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { Reader } from 'maxmind'
import { loadAsnNumCsv, type AsnTable } from './asn.js'
import { IpDataNotInstalledError, notInstalledPackageOf } from './data-paths.js'
import { createProjectedGet, readFlags, readLocation, type FlagFacts, type IpLocation } from './mmdb.js'
import type { ParsedIp } from './parse.js'

/** Files of a data set's IP data. */
export interface IpDataFiles {
  /** city database answering IPv4 (may be the same file as cityV6) */
  cityV4: string
  /** city database answering IPv6 */
  cityV6: string
  /** ASN CSV, IPv4 (`-num` layout) */
  asnV4: string
  /** ASN CSV, IPv6 (`-num` layout) */
  asnV6: string
  /** riskcheck's compiled flags MMDB */
  flags: string
  /** hosting / VPN ASN lists (JSON) */
  asnFlags: string
}

/** Names reported in `dataSources` (with the data version, e.g. `dbip-city-lite@2026-11`). */
export interface IpDataNames {
  city: string
  asn: string
  /** the sources the flags were compiled from */
  flags: readonly string[]
}

/** A load that succeeded or failed (a failure is remembered: the lookup reports the part as failed). */
export type Lazy<T> = { ok: true; value: T } | { ok: false; error: Error }

/** Hosting and VPN ASNs. */
export interface AsnFlagData {
  hosting: Set<number>
  vpn: Map<number, string>
}

/** A projected city lookup. */
export type CityGet = (ip: ParsedIp) => IpLocation | null
/** A projected flags lookup. */
export type FlagsGet = (ip: ParsedIp) => FlagFacts | null

/** The parts of the IP data. */
export type IpDataPart = 'cityV4' | 'cityV6' | 'asnV4' | 'asnV6' | 'flags' | 'asnFlags'

/** The IP data of one data set. */
export interface IpData {
  readonly files: IpDataFiles
  readonly names: IpDataNames
  cityV4(): Lazy<CityGet>
  cityV6(): Lazy<CityGet>
  asnV4(): Lazy<AsnTable>
  asnV6(): Lazy<AsnTable>
  flags(): Lazy<FlagsGet>
  asnFlags(): Lazy<AsnFlagData>
  /** parts loaded so far */
  loaded(): IpDataPart[]
  /** loads parts now, reading files asynchronously; resolves with the failures (`part: message`; a part whose optional package is not installed is none) */
  preload(parts: readonly IpDataPart[]): Promise<string[]>
  /** drops this holder's claim on the shared parts (a part nobody holds is freed) */
  release(): void
}

/**
 * Entries per generation of the city databases' projection cache (two generations). 32k small location objects ≈
 * 6 MB at most; measured with scripts/bench/ip.ts.
 */
const CITY_CACHE = 32_768

function parseAsnFlags(buf: Buffer): AsnFlagData {
  const json = JSON.parse(buf.toString('utf8')) as { hosting?: unknown; vpn?: unknown }
  const hosting = new Set<number>(Array.isArray(json.hosting) ? json.hosting.filter((x): x is number => Number.isInteger(x)) : [])
  const vpn = new Map<number, string>()
  if (json.vpn && typeof json.vpn === 'object')
    for (const [k, v] of Object.entries(json.vpn as Record<string, unknown>)) if (typeof v === 'string') vpn.set(Number(k), v)
  return { hosting, vpn }
}

/** How each part is built from its file's bytes, and its key in the shared cache. */
const PARTS: Record<IpDataPart, { key: string; file: keyof IpDataFiles; build: (buf: Buffer) => unknown }> = {
  cityV4: { key: 'city', file: 'cityV4', build: (b) => createProjectedGet(new Reader<Record<string, unknown>>(b), b, readLocation, CITY_CACHE) },
  cityV6: { key: 'city', file: 'cityV6', build: (b) => createProjectedGet(new Reader<Record<string, unknown>>(b), b, readLocation, CITY_CACHE) },
  asnV4: { key: 'asn4', file: 'asnV4', build: (b) => loadAsnNumCsv(b, 1) },
  asnV6: { key: 'asn6', file: 'asnV6', build: (b) => loadAsnNumCsv(b, 4) },
  flags: { key: 'flags', file: 'flags', build: (b) => createProjectedGet(new Reader<Record<string, unknown>>(b), b, readFlags, 1000) },
  asnFlags: { key: 'asnflags', file: 'asnFlags', build: parseAsnFlags },
}
const PART_NAMES = Object.keys(PARTS) as IpDataPart[]

interface SharedEntry {
  lazy: Lazy<unknown>
  holders: number
}
const shared = new Map<string, SharedEntry>()

/** A file's bytes; an {@link IpDataNotInstalledError} for a file of an optional data package that is not installed. */
function readPartFile(path: string): Buffer {
  const pkg = notInstalledPackageOf(path)
  if (pkg) throw new IpDataNotInstalledError(pkg)
  return readFileSync(path)
}

function settle(build: () => unknown): Lazy<unknown> {
  try {
    return { ok: true, value: build() }
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e : new Error(String(e)) }
  }
}

/**
 * Drops every shared part (tests; frees memory). Data created afterwards loads again; data that already loaded a
 * part keeps its copy.
 */
export function clearSharedIpData(): void {
  shared.clear()
}

/** Keys (`part:path`) of the parts in the shared cache (tests check that replaced data is freed). */
export function listSharedIpParts(): string[] {
  return [...shared.keys()]
}

/**
 * The IP data of `files`. Nothing is read until a part is asked for. Parts are shared by file path, or by content id
 * (`contentIds`, e.g. a SHA-256) when given. With `release`, the parts this handle used are freed when no other
 * handle holds them (data sets that get replaced); the bundled data is never released.
 */
export function createIpData(files: IpDataFiles, names: IpDataNames, contentIds: Partial<Record<keyof IpDataFiles, string>> = {}): IpData {
  const mine = new Map<IpDataPart, Lazy<unknown>>()
  const held = new Set<string>()
  let released = false
  // a file's content id (its SHA-256) when known: data sets that share a file (hard links of an unchanged source)
  // share its loaded part, so a switch loads only what changed
  const keyOf = (part: IpDataPart) => `${PARTS[part].key}:${contentIds[PARTS[part].file] ?? files[PARTS[part].file]}`
  const claim = (key: string, entry: SharedEntry) => {
    if (!held.has(key) && !released) {
      held.add(key)
      entry.holders++
    }
  }
  const get = (part: IpDataPart): Lazy<unknown> => {
    const have = mine.get(part)
    if (have) return have
    const key = keyOf(part)
    let entry = shared.get(key)
    if (!entry) {
      entry = { lazy: settle(() => PARTS[part].build(readPartFile(files[PARTS[part].file]))), holders: 0 }
      if (!released) shared.set(key, entry)
    }
    claim(key, entry)
    mine.set(part, entry.lazy)
    return entry.lazy
  }
  // Each part once resolved is kept in its own variable: every IP lookup asks for up to four parts, and a variable
  // read is cheaper than a Map lookup by part name.
  let cityV4: Lazy<CityGet> | undefined
  let cityV6: Lazy<CityGet> | undefined
  let asnV4: Lazy<AsnTable> | undefined
  let asnV6: Lazy<AsnTable> | undefined
  let flags: Lazy<FlagsGet> | undefined
  let asnFlags: Lazy<AsnFlagData> | undefined
  return {
    files,
    names,
    cityV4: () => (cityV4 ??= get('cityV4') as Lazy<CityGet>),
    cityV6: () => (cityV6 ??= get('cityV6') as Lazy<CityGet>),
    asnV4: () => (asnV4 ??= get('asnV4') as Lazy<AsnTable>),
    asnV6: () => (asnV6 ??= get('asnV6') as Lazy<AsnTable>),
    flags: () => (flags ??= get('flags') as Lazy<FlagsGet>),
    asnFlags: () => (asnFlags ??= get('asnFlags') as Lazy<AsnFlagData>),
    loaded: () => PART_NAMES.filter((p) => mine.has(p)),
    async preload(parts) {
      const failures: string[] = []
      for (const part of parts) {
        if (mine.has(part)) continue
        const key = keyOf(part)
        let entry = shared.get(key)
        if (!entry) {
          let lazy: Lazy<unknown>
          try {
            const pkg = notInstalledPackageOf(files[PARTS[part].file])
            if (pkg) throw new IpDataNotInstalledError(pkg)
            const buf = await readFile(files[PARTS[part].file])
            lazy = settle(() => PARTS[part].build(buf))
          } catch (e) {
            lazy = { ok: false, error: e instanceof Error ? e : new Error(String(e)) }
          }
          // another holder may have loaded it while this one was reading
          entry = shared.get(key) ?? { lazy, holders: 0 }
          if (!released) shared.set(key, entry)
        }
        claim(key, entry)
        mine.set(part, entry.lazy)
        // a part whose optional package is not installed is no failure: the set answers without it
        if (!entry.lazy.ok && !(entry.lazy.error instanceof IpDataNotInstalledError)) failures.push(`${part}: ${entry.lazy.error.message}`)
      }
      return failures
    },
    release() {
      if (released) return
      released = true
      for (const key of held) {
        const entry = shared.get(key)
        if (entry && --entry.holders <= 0) shared.delete(key)
      }
      held.clear()
    },
  }
}
