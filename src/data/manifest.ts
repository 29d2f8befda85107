/**
 * The manifest of a data set (`manifest.json` in its directory): for every updatable source where its data came
 * from, which version it is, how old the data is, how many entries it has and the SHA-256 of every file, plus the
 * compiled files built from them. Written by `riskcheck data update`, read by the lookups and `data status`.
 */
import { DATA_SOURCE_NAMES, isDataSourceName, type DataSourceName } from './catalog.js'

/** Version of the manifest layout. */
export const MANIFEST_FORMAT = 1

/** Where a source's data in a set came from. */
export type SourceOrigin =
  /** downloaded by this or an earlier update (from its upstream or a `--source` override) */
  | 'fetched'
  /** the package's bundled snapshot, copied into the set (so the compiled files built from it stay exact) */
  | 'bundled-copy'
  /** the package's bundled files, used where they are (nothing of it is in the set) */
  | 'bundled'

/** One file of a set, relative to the set directory. */
export interface ManifestFile {
  path: string
  bytes: number
  sha256: string
}

/** A source in a set. */
export interface ManifestSource {
  origin: SourceOrigin
  /** where it was fetched from (URL or local path); null for the bundled data */
  upstream: string | null
  /** the data's version: the upstream's own (`2026-11` for DB-IP) or the date it was fetched */
  version: string
  /** ISO date-time the data is from (the upstream's build date when it has one, else the fetch time) */
  data_date: string | null
  /** ISO date-time of the download; null for bundled data */
  fetched_at: string | null
  /** networks, domains, ranges or database nodes */
  entries: number
  /** `verified`: a checksum the upstream publishes matched; `none`: the upstream publishes none */
  checksum: 'verified' | 'none'
  /** the source's files in the set (empty for `bundled`) */
  files: ManifestFile[]
}

/** A compiled file of a set, built from its sources. */
export interface ManifestBuilt extends ManifestFile {
  /** the sources it was built from */
  from: DataSourceName[]
}

/** The whole manifest. */
export interface DataManifest {
  format: typeof MANIFEST_FORMAT
  /** the set's directory name */
  id: string
  created_at: string
  /** the riskcheck version that built it */
  riskcheck: string
  sources: Record<DataSourceName, ManifestSource>
  /** compiled files (`ip/flags.mmdb`, `ip/asn-flags.json`, `email/disposable.json`, `email/free-providers.txt`) */
  built: ManifestBuilt[]
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const isStr = (v: unknown): v is string => typeof v === 'string'
const SAFE_PATH = /^(?:[A-Za-z0-9._-]+\/)*[A-Za-z0-9._-]+$/

function checkFile(v: unknown, where: string): ManifestFile {
  if (!isObj(v) || !isStr(v.path) || !SAFE_PATH.test(v.path) || v.path.split('/').includes('..'))
    throw new Error(`${where}: a file needs a relative path inside the set`)
  if (typeof v.bytes !== 'number' || !Number.isSafeInteger(v.bytes) || v.bytes < 0) throw new Error(`${where}: bad byte count`)
  if (!isStr(v.sha256) || !/^[0-9a-f]{64}$/.test(v.sha256)) throw new Error(`${where}: bad sha256`)
  return { path: v.path, bytes: v.bytes, sha256: v.sha256 }
}

/**
 * Validates parsed `manifest.json` content. Throws an Error naming the first problem (a set with a bad manifest is
 * never used). File paths must stay inside the set directory.
 */
export function parseManifest(value: unknown): DataManifest {
  if (!isObj(value)) throw new Error('manifest: not an object')
  if (value.format !== MANIFEST_FORMAT) throw new Error(`manifest: unknown format ${String(value.format)}`)
  if (!isStr(value.id) || !isStr(value.created_at) || !isStr(value.riskcheck)) throw new Error('manifest: id, created_at and riskcheck are required')
  if (!isObj(value.sources)) throw new Error('manifest: sources missing')
  const sources = {} as Record<DataSourceName, ManifestSource>
  for (const name of DATA_SOURCE_NAMES) {
    const s = value.sources[name]
    if (!isObj(s)) throw new Error(`manifest: source ${name} missing`)
    if (s.origin !== 'fetched' && s.origin !== 'bundled-copy' && s.origin !== 'bundled') throw new Error(`manifest: source ${name}: bad origin`)
    if (!isStr(s.version) || s.version === '') throw new Error(`manifest: source ${name}: version missing`)
    if (s.data_date !== null && !(isStr(s.data_date) && Number.isFinite(Date.parse(s.data_date)))) throw new Error(`manifest: source ${name}: bad data_date`)
    if (s.fetched_at !== null && !(isStr(s.fetched_at) && Number.isFinite(Date.parse(s.fetched_at)))) throw new Error(`manifest: source ${name}: bad fetched_at`)
    if (typeof s.entries !== 'number' || !Number.isSafeInteger(s.entries) || s.entries < 0) throw new Error(`manifest: source ${name}: bad entries`)
    if (s.checksum !== 'verified' && s.checksum !== 'none') throw new Error(`manifest: source ${name}: bad checksum`)
    if (!Array.isArray(s.files)) throw new Error(`manifest: source ${name}: files missing`)
    sources[name] = {
      origin: s.origin,
      upstream: isStr(s.upstream) ? s.upstream : null,
      version: s.version,
      data_date: s.data_date as string | null,
      fetched_at: s.fetched_at as string | null,
      entries: s.entries,
      checksum: s.checksum,
      files: s.files.map((f, i) => checkFile(f, `manifest: source ${name} file ${i}`)),
    }
  }
  if (!Array.isArray(value.built)) throw new Error('manifest: built missing')
  const built = value.built.map((b, i): ManifestBuilt => {
    const f = checkFile(b, `manifest: built ${i}`)
    const from = isObj(b) && Array.isArray(b.from) ? b.from.filter((x): x is DataSourceName => isStr(x) && isDataSourceName(x)) : []
    return { ...f, from }
  })
  return { format: MANIFEST_FORMAT, id: value.id, created_at: value.created_at, riskcheck: value.riskcheck, sources, built }
}
