/**
 * Fetching and checking one source for `riskcheck data update`: download into the set being built, check the format
 * (every list must have usable lines, a city database must open and decode, CSV tables must parse), verify the
 * checksums the upstream publishes (the ASN tables: SHA-256 from jsDelivr's package API), and refuse a source that
 * shrank to less than half of the data in use. A refused source throws a {@link SourceError} naming the reason; its
 * files are removed by the caller.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { loadAsnNumCsv } from '../sources/ip/asn.js'
import { openMmdb } from '../sources/ip/mmdb.js'
import { dateOfIpLocationDbVersion } from './bundled.js'
import { compileDisposable, type CompiledDisposable } from './build-email-lists.js'
import { countListEntries } from './build-ip-flags.js'
import { DATA_SOURCES, type DataSourceName, type UpstreamUrls } from './catalog.js'
import { SET_FILES } from './data-set.js'
import { DownloadError, localPathOf, type DownloadOptions, type Downloaded } from './download.js'
import { listFilesOf, type IpListSource, type ListFile } from './ip-lists.js'
import type { ManifestFile, ManifestSource } from './manifest.js'

/** A source was refused; the message says why. */
export class SourceError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SourceError'
  }
}

/** What fetching a source needs. */
export interface FetchEnv {
  /** the set being built (files go to `setDir/<path>`) */
  setDir: string
  /** the time of the update */
  now: Date
  /** `--source NAME=…`: a URL, a `file:` URL or a local path; null: the default upstream */
  override: string | null
  upstreams: UpstreamUrls
  /** downloads with the update's fetch, limits and progress reporting */
  download(location: string, dest: string, options?: Partial<DownloadOptions>): Promise<Downloaded>
  /** entries of this source in the data in use, or null when not comparable */
  previousEntries(): Promise<number | null>
  /** skip the shrink check */
  force: boolean
}

/** A fetched and checked source. */
export interface FetchedSource {
  source: ManifestSource
  /** range-list sources: the catalog entries of the files fetched */
  lists?: ListFile[]
  /** the disposable source: the compiled list */
  disposable?: CompiledDisposable
  /** things worth saying (an optional file the upstream does not publish) */
  notes: string[]
}

/** `location` joined with a relative path: a URL base or a directory. */
export function joinLocation(base: string, rel: string): string {
  if (/^https?:\/\//i.test(base) || /^file:\/\//i.test(base)) return new URL(rel, base.endsWith('/') ? base : `${base}/`).href
  return join(base, rel)
}

const isMissing = (e: unknown) => e instanceof DownloadError && (e.status === 404 || e.status === 410 || /ENOENT/.test(e.message))

function isoMinute(d: Date): string {
  return `${d.toISOString().slice(0, 16)}Z`
}

async function checkShrink(name: DataSourceName, entries: number, env: FetchEnv): Promise<void> {
  if (env.force) return
  const prev = await env.previousEntries()
  if (prev !== null && prev > 0 && entries * 2 < prev)
    throw new SourceError(
      `refused: ${entries} entries, less than half of the ${prev} in the data in use (a truncated or broken upstream?); the data in use stays. ` +
        `Use --force to accept it anyway.`,
    )
  if (entries === 0) throw new SourceError(`refused: no usable entry in the ${name} data`)
}

function fileEntry(rel: string, d: Downloaded): ManifestFile {
  return { path: rel, bytes: d.storedBytes, sha256: d.storedSha256 }
}

function fetched(env: FetchEnv, upstream: string, version: string, dataDate: Date, entries: number, checksum: 'verified' | 'none', files: ManifestFile[]): ManifestSource {
  return { origin: 'fetched', upstream, version, data_date: dataDate.toISOString(), fetched_at: env.now.toISOString(), entries, checksum, files }
}

async function fetchToSet(env: FetchEnv, location: string, rel: string, options?: Partial<DownloadOptions>): Promise<Downloaded> {
  const dest = join(env.setDir, rel)
  mkdirSync(dirname(dest), { recursive: true })
  return env.download(location, dest, options)
}

// ─── range lists (tor, vpn, datacenter, cloud) ───────────────────────────────────────────────────────────────────

async function fetchLists(name: IpListSource, env: FetchEnv): Promise<FetchedSource> {
  const catalog = listFilesOf(name)
  const single = catalog.length === 1
  const files: ManifestFile[] = []
  const lists: ListFile[] = []
  const notes: string[] = []
  let total = 0
  for (const file of catalog) {
    const location = env.override ? (single ? env.override : joinLocation(env.override, file.path)) : file.url
    const rel = `${SET_FILES.lists}/${file.path}`
    let d: Downloaded
    try {
      d = await fetchToSet(env, location, rel)
    } catch (e) {
      if (!file.required && isMissing(e)) {
        notes.push(`${file.path} not published (optional)`)
        continue
      }
      throw new SourceError(`${location}: ${(e as Error).message}`)
    }
    const { entries, skipped } = countListEntries(readFileSync(join(env.setDir, rel), 'utf8'), file)
    if (entries === 0) {
      const what = file.role.kind.endsWith('asns') ? 'AS numbers' : 'networks'
      throw new SourceError(`${location}: no usable line (${skipped} lines that are not ${what}; an error page?)`)
    }
    total += entries
    files.push(fileEntry(rel, d))
    lists.push(file)
  }
  await checkShrink(name, total, env)
  const version = name === 'tor' ? isoMinute(env.now) : env.now.toISOString().slice(0, 10)
  return { source: fetched(env, env.override ?? DATA_SOURCES[name].upstream, version, env.now, total, 'none', files), lists, notes }
}

// ─── disposable domains ──────────────────────────────────────────────────────────────────────────────────────────

function parseDomainList(text: string, what: string): unknown[] {
  const t = text.trimStart()
  if (t.startsWith('[')) {
    let v: unknown
    try {
      v = JSON.parse(t)
    } catch (e) {
      throw new SourceError(`${what}: not valid JSON (${(e as Error).message}; a truncated download?)`)
    }
    if (!Array.isArray(v)) throw new SourceError(`${what}: not a JSON array of domains`)
    return v
  }
  if (t.startsWith('{') || t.startsWith('<')) throw new SourceError(`${what}: not a list of domains (a JSON object or an HTML page)`)
  return t
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('//'))
}

/**
 * Whether a `--source disposable=` location names one list file (a local file, or a URL whose path ends in .json,
 * .txt, .conf or .lst) rather than a directory or base URL of the upstream's layout.
 */
export function isSingleListFile(location: string): boolean {
  const local = localPathOf(location)
  if (local !== null) {
    try {
      return statSync(local).isFile()
    } catch {
      return false
    }
  }
  // An http(s) address: its path (the URL parser drops the query and fragment) names one list file by its extension.
  let path: string
  try {
    path = new URL(location).pathname
  } catch {
    return false
  }
  return /\.(?:json|txt|conf|lst)$/i.test(path)
}

async function fetchDisposable(env: FetchEnv): Promise<FetchedSource> {
  const scratch = join(env.setDir, 'email', '.download')
  mkdirSync(scratch, { recursive: true })
  const notes: string[] = []
  const get = async (location: string, file: string): Promise<string> => {
    const dest = join(scratch, file)
    try {
      await env.download(location, dest)
    } catch (e) {
      throw e instanceof DownloadError ? new DownloadError(`${location}: ${e.message}`, e.status) : e
    }
    return readFileSync(dest, 'utf8')
  }
  try {
    return await compileFetchedDisposable(env, get, notes)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

async function compileFetchedDisposable(env: FetchEnv, get: (location: string, file: string) => Promise<string>, notes: string[]): Promise<FetchedSource> {
  let exact: unknown[]
  let wildcard: unknown[] = []
  let upstream: string
  try {
    if (env.override && isSingleListFile(env.override)) {
      upstream = env.override
      exact = parseDomainList(await get(env.override, 'list'), env.override)
    } else {
      const base = env.override ?? env.upstreams.disposableBase
      upstream = base
      const index = joinLocation(base, 'index.json')
      exact = parseDomainList(await get(index, 'index.json'), index)
      const wild = joinLocation(base, 'wildcard.json')
      try {
        wildcard = parseDomainList(await get(wild, 'wildcard.json'), wild)
      } catch (e) {
        if (!isMissing(e)) throw e
        notes.push('wildcard.json not published: exact domains only')
      }
    }
  } catch (e) {
    if (e instanceof SourceError) throw e
    throw new SourceError((e as Error).message)
  }
  const compiled = compileDisposable(exact, wildcard)
  const entries = compiled.exact.length + compiled.wildcard.length
  await checkShrink('disposable', entries, env)
  if (compiled.dropped > 0) notes.push(`${compiled.dropped} entries that are not domain names left out`)
  const body = `${JSON.stringify({ exact: compiled.exact, wildcard: compiled.wildcard })}\n`
  const dest = join(env.setDir, SET_FILES.disposable)
  writeFileSync(dest, body)
  const file: ManifestFile = { path: SET_FILES.disposable, bytes: Buffer.byteLength(body), sha256: createHash('sha256').update(body).digest('hex') }
  return {
    source: fetched(env, upstream, env.now.toISOString().slice(0, 10), env.now, entries, 'none', [file]),
    disposable: compiled,
    notes,
  }
}

// ─── DB-IP city ──────────────────────────────────────────────────────────────────────────────────────────────────

function monthOf(d: Date, back: number): string {
  const m = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back, 1))
  return m.toISOString().slice(0, 7)
}

async function fetchCity(env: FetchEnv): Promise<FetchedSource> {
  const candidates = env.override ? [env.override] : [0, 1].map((back) => env.upstreams.dbipCityPattern.replace('{month}', monthOf(env.now, back)))
  let d: Downloaded | undefined
  let location = ''
  const notes: string[] = []
  for (const [i, loc] of candidates.entries()) {
    location = loc
    try {
      d = await fetchToSet(env, loc, SET_FILES.city)
      break
    } catch (e) {
      if (isMissing(e) && i < candidates.length - 1) {
        notes.push(`${loc} not published yet; taking the previous month`)
        continue
      }
      throw new SourceError(`${loc}: ${(e as Error).message}`)
    }
  }
  if (!d) throw new SourceError('no DB-IP file found')
  const path = join(env.setDir, SET_FILES.city)
  let nodes: number
  let built: Date
  try {
    const db = openMmdb(path, 'dbip-city', 'city')
    nodes = db.reader.metadata.nodeCount
    built = db.reader.metadata.buildEpoch
  } catch (e) {
    throw new SourceError(`${location}: refused: ${(e as Error).message.replace(/^option dbip-city: /, '')}`)
  }
  await checkShrink('dbip-city', nodes, env)
  const month = /(\d{4}-\d{2})\.mmdb/.exec(location)?.[1] ?? (Number.isFinite(built.getTime()) ? built.toISOString().slice(0, 7) : env.now.toISOString().slice(0, 7))
  const dataDate = Number.isFinite(built.getTime()) && built.getTime() > 0 ? built : env.now
  return { source: fetched(env, location, month, dataDate, nodes, 'none', [fileEntry(SET_FILES.city, d)]), notes }
}

// ─── ASN tables ──────────────────────────────────────────────────────────────────────────────────────────────────

const ASN_FILES = [
  { name: 'asn-ipv4-num.csv', rel: SET_FILES.asnV4, words: 1 as const },
  { name: 'asn-ipv6-num.csv', rel: SET_FILES.asnV6, words: 4 as const },
]
const ASN_PACKAGE = '@ip-location-db/asn'

async function readJsonFrom(env: FetchEnv, location: string, scratch: string): Promise<unknown> {
  const dest = join(scratch, 'api.json')
  try {
    await env.download(location, dest, { gunzip: false, maxBytes: 8 * 1024 * 1024 })
    return JSON.parse(readFileSync(dest, 'utf8'))
  } catch (e) {
    throw new SourceError(`cannot read the published version and checksums (${location}): ${(e as Error).message}`)
  }
}

/** The package version jsDelivr serves as latest, and the SHA-256 (hex) of each file. */
async function resolveAsnRelease(env: FetchEnv, scratch: string): Promise<{ version: string; sha256: Map<string, string> }> {
  const api = env.upstreams.jsdelivrApi
  const resolved = (await readJsonFrom(env, `${api}${ASN_PACKAGE}/resolved?specifier=latest`, scratch)) as { version?: unknown }
  const version = typeof resolved?.version === 'string' && /^[0-9A-Za-z.+-]{1,64}$/.test(resolved.version) ? resolved.version : null
  if (!version) throw new SourceError(`jsDelivr did not name a version of ${ASN_PACKAGE}`)
  const meta = (await readJsonFrom(env, `${api}${ASN_PACKAGE}@${version}?structure=flat`, scratch)) as { files?: unknown }
  const sha256 = new Map<string, string>()
  if (Array.isArray(meta?.files))
    for (const f of meta.files as Array<{ name?: unknown; hash?: unknown }>)
      if (typeof f?.name === 'string' && typeof f.hash === 'string') sha256.set(f.name.replace(/^\//, ''), Buffer.from(f.hash, 'base64').toString('hex'))
  for (const f of ASN_FILES) if (!sha256.has(f.name)) throw new SourceError(`jsDelivr publishes no checksum for ${ASN_PACKAGE}@${version}/${f.name}`)
  return { version, sha256 }
}

async function fetchAsn(env: FetchEnv): Promise<FetchedSource> {
  const scratch = join(env.setDir, 'ip', '.api')
  mkdirSync(scratch, { recursive: true })
  let release: { version: string; sha256: Map<string, string> } | null
  try {
    release = env.override ? null : await resolveAsnRelease(env, scratch)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  const base = env.override ?? env.upstreams.asnCdnPattern.replace('{version}', (release as { version: string }).version)
  const files: ManifestFile[] = []
  let entries = 0
  for (const f of ASN_FILES) {
    const location = joinLocation(base, f.name)
    let d: Downloaded
    try {
      d = await fetchToSet(env, location, f.rel, { gunzip: true })
    } catch (e) {
      throw new SourceError(`${location}: ${(e as Error).message}`)
    }
    const want = release?.sha256.get(f.name)
    if (want !== undefined && want !== d.sha256)
      throw new SourceError(`${location}: checksum mismatch: jsDelivr publishes sha256 ${want}, the download has ${d.sha256}`)
    let rows: number
    try {
      rows = loadAsnNumCsv(readFileSync(join(env.setDir, f.rel)), f.words).size
    } catch (e) {
      throw new SourceError(`${location}: cannot be read as an ASN table: ${(e as Error).message}`)
    }
    if (rows === 0) throw new SourceError(`${location}: no usable row (start,end,asn,name with decimal bounds expected)`)
    entries += rows
    files.push(fileEntry(f.rel, d))
  }
  await checkShrink('asn', entries, env)
  const released = release ? dateOfIpLocationDbVersion(release.version) : null
  const version = released ? released.toISOString().slice(0, 10) : (release?.version ?? env.now.toISOString().slice(0, 10))
  return { source: fetched(env, base, version, released ?? env.now, entries, release ? 'verified' : 'none', files), notes: [] }
}

/**
 * Fetches and checks source `name` into the set being built. Throws a {@link SourceError} with the reason when the
 * source is refused.
 */
export async function fetchSource(name: DataSourceName, env: FetchEnv): Promise<FetchedSource> {
  switch (DATA_SOURCES[name].kind) {
    case 'ip-lists':
      return fetchLists(name as IpListSource, env)
    case 'disposable':
      return fetchDisposable(env)
    case 'city-mmdb':
      return fetchCity(env)
    case 'asn-csv':
      return fetchAsn(env)
  }
}
