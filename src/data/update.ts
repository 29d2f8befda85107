/**
 * `riskcheck data update`: fetch the sources, check them, rebuild the compiled data and install a new data set
 * atomically (./store.ts has the directory layout, ./fetch-source.ts the checks). The steps and why an update never
 * leaves a half set: docs/decisions.md, "Data updates".
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { dirname, join, resolve } from 'node:path'
import { loadAsnNumCsv } from '../sources/ip/asn.js'
import { openMmdb } from '../sources/ip/mmdb.js'
import { VERSION } from '../version.js'
import { getBundledFiles, getBundledSources } from './bundled.js'
import { compileDisposable, subtractDisposable } from './build-email-lists.js'
import { buildIpFlags, countListEntries, writeIpFlags, type ListInput } from './build-ip-flags.js'
import { DATA_SOURCE_NAMES, DATA_SOURCES, DEFAULT_UPSTREAMS, type DataSourceName, type UpstreamUrls } from './catalog.js'
import { SET_FILES } from './data-set.js'
import { download, DownloadError, isUnreachableDownload, localPathOf, type DownloadOptions } from './download.js'
import { fetchSource, SourceError, type FetchedSource } from './fetch-source.js'
import { BUNDLED_TOR_LIST, bundledListFilesOf, IP_LIST_SOURCES, IP_LISTS, type IpListSource, type ListFile } from './ip-lists.js'
import { withDataLock, type LockOptions } from './lock.js'
import { MANIFEST_FORMAT, type DataManifest, type ManifestBuilt, type ManifestFile, type ManifestSource } from './manifest.js'
import {
  findSetFileProblem,
  installSet,
  listSets,
  newSetId,
  pruneSets,
  readPointer,
  readSetManifest,
  setPath,
  stagingPath,
  switchPointer,
  writeFileDurably,
} from './store.js'

/** What the update reports while it runs (the CLI prints these). */
export type UpdateEvent =
  | { type: 'fetch'; source: DataSourceName; location: string }
  | { type: 'progress'; source: DataSourceName; location: string; received: number; total: number | null }
  | { type: 'fetched'; source: DataSourceName; version: string; entries: number; checksum: 'verified' | 'none'; notes: string[] }
  /** a source was refused (a check failed) or could not be fetched (`network`: the download failed) */
  | { type: 'refused'; source: DataSourceName; reason: string; network: boolean }
  | { type: 'built'; file: string }
  | { type: 'installed'; set: string; previous: string | null }

/** Steps of the update, for crash-point tests (`onStep` may throw to stop the update there). */
export type UpdateStep = 'fetched' | 'built' | 'manifest-written' | 'installed'

/** Options of {@link updateData}. */
export interface UpdateOptions {
  /** the data directory (created when missing) */
  dataDir: string
  /** the sources to update (default: all) */
  only?: readonly DataSourceName[]
  /** `--source NAME=URL|FILE`: a mirror or local file per source */
  sources?: Partial<Record<DataSourceName, string>>
  /** accept a source that shrank to less than half of the data in use */
  force?: boolean
  /** installed sets kept, the new one included (default 3, at least 2: the previous set stays for rollback) */
  keep?: number
  /** the clock (default `() => new Date()`) */
  now?: () => Date
  /** the fetch used for downloads (default: global fetch) */
  fetch?: typeof fetch
  /** progress and results as they happen */
  onEvent?: (event: UpdateEvent) => void
  /** waiting for another update's lock, stale-lock timing */
  lock?: LockOptions
  /** idle timeout of one download, in ms (default 60000) */
  idleTimeoutMs?: number
  /** @internal replace the default upstream locations (tests point them at loopback) */
  upstreams?: Partial<UpstreamUrls>
  /** @internal wait between download retries (tests) */
  sleep?: (ms: number) => Promise<void>
  /** @internal called after each step; a throw stops the update there (crash-point tests) */
  onStep?: (step: UpdateStep) => void
}

/** A source that was fetched and installed. */
export interface UpdatedSource {
  name: DataSourceName
  version: string
  entries: number
  checksum: 'verified' | 'none'
  upstream: string | null
  notes: string[]
}

/** What {@link updateData} did. */
export interface UpdateResult {
  data_dir: string
  /** every selected source was updated */
  ok: boolean
  /** the new set's id (null: nothing installed) */
  installed: string | null
  /** the set in force before (null: the bundled data) */
  previous: string | null
  updated: UpdatedSource[]
  /**
   * refused sources and why; their data in use did not change. `unreachable: true` (else absent): its upstream could
   * not be reached at all (DNS failure, refused connection, unreachable network)
   */
  failed: { name: DataSourceName; reason: string; unreachable?: true }[]
  /** sets removed (older than the newest `keep`) */
  pruned: string[]
}

/** The set an update starts from. */
interface Base {
  id: string | null
  dir: string | null
  sources: Record<DataSourceName, ManifestSource>
  built: ManifestBuilt[]
}

function readBase(dataDir: string): Base {
  let id: string | null = null
  try {
    id = readPointer(dataDir)
  } catch {
    id = null // an unreadable pointer: start from the bundled data; the new set repairs the pointer
  }
  if (id !== null) {
    try {
      const m = readSetManifest(dataDir, id)
      if (findSetFileProblem(dataDir, m) === null) return { id, dir: setPath(dataDir, id), sources: m.sources, built: m.built }
    } catch {
      // a damaged set is not a base
    }
  }
  return { id: null, dir: null, sources: { ...getBundledSources() }, built: [] }
}

function sha256File(path: string): ManifestFile & { path: string } {
  const buf = readFileSync(path)
  return { path, bytes: buf.length, sha256: createHash('sha256').update(buf).digest('hex') }
}

/** Hard-links (or copies, across file systems) `rel` from the base set into the new one. */
function carryFile(fromDir: string, toDir: string, rel: string): void {
  const dst = join(toDir, rel)
  mkdirSync(dirname(dst), { recursive: true })
  try {
    linkSync(join(fromDir, rel), dst)
  } catch {
    copyFileSync(join(fromDir, rel), dst)
  }
}

/** The catalog entry of a list file stored at `lists/<path>` in a set. */
function listFileOf(rel: string): ListFile | undefined {
  const path = rel.slice(SET_FILES.lists.length + 1)
  return IP_LISTS.find((f) => f.path === path) ?? (BUNDLED_TOR_LIST.path === path ? BUNDLED_TOR_LIST : undefined)
}

/** Entries of a source in the bundled data, counted the way an update counts them (null: not comparable). */
function countBundledEntries(name: DataSourceName): number | null {
  const f = getBundledFiles()
  // the bundled Tor snapshot is another list (SecOps-Institute, with IPv6 exits) than the Tor Project's IPv4 list
  if (name === 'tor') return null
  switch (DATA_SOURCES[name].kind) {
    case 'ip-lists': {
      let n = 0
      for (const file of bundledListFilesOf(name as IpListSource)) {
        const p = join(f.lists, file.path)
        if (existsSync(p)) n += countListEntries(readFileSync(p, 'utf8'), file).entries
      }
      return n
    }
    case 'disposable': {
      const read = (file: string): unknown[] => {
        try {
          return JSON.parse(readFileSync(join(f.disposablePackage, file), 'utf8')) as unknown[]
        } catch {
          return []
        }
      }
      const c = compileDisposable(read('index.json'), read('wildcard.json'))
      return c.exact.length + c.wildcard.length
    }
    case 'asn-csv':
      try {
        return loadAsnNumCsv(readFileSync(f.asnV4), 1).size + loadAsnNumCsv(readFileSync(f.asnV6), 4).size
      } catch {
        return null
      }
    case 'city-mmdb':
      return null // the bundled city data is split into IPv4 and IPv6 files: node counts do not compare
  }
  return null
}

/** Copies the bundled lists of a range source into the set (its data becomes part of what the flags are built from). */
function copyBundledLists(name: IpListSource, stage: string): ManifestSource {
  const f = getBundledFiles()
  const files: ManifestFile[] = []
  let entries = 0
  for (const file of bundledListFilesOf(name)) {
    const src = join(f.lists, file.path)
    if (!existsSync(src)) continue
    const rel = `${SET_FILES.lists}/${file.path}`
    mkdirSync(dirname(join(stage, rel)), { recursive: true })
    copyFileSync(src, join(stage, rel))
    const h = sha256File(join(stage, rel))
    files.push({ path: rel, bytes: h.bytes, sha256: h.sha256 })
    entries += countListEntries(readFileSync(src, 'utf8'), file).entries
  }
  const b = getBundledSources()[name]
  return { ...b, origin: 'bundled-copy', entries, files }
}

function freeListHeader(now: Date, removed: number): string {
  return [
    '# Free webmail / consumer mailbox domains: the bundled list of riskcheck (freemail, ISC, plus curated additions)',
    `# minus ${removed} domains that the disposable list of this data set names. Built by riskcheck data update on ${now.toISOString()}.`,
  ].join('\n')
}

function readBundledFree(): string[] {
  return readFileSync(getBundledFiles().freeProviders, 'utf8')
    .split('\n')
    .map((l) => l.trim().toLowerCase())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

/** Removes the empty directories under `root` (left by refused downloads), deepest first. */
function removeEmptyDirs(root: string): void {
  for (const e of readdirSync(root, { withFileTypes: true })) {
    if (!e.isDirectory()) continue
    const p = join(root, e.name)
    removeEmptyDirs(p)
    if (readdirSync(p).length === 0) rmdirSync(p)
  }
}

/** Runs at most `limit` tasks at once. */
async function inPool<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items]
  const worker = async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await task(item)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

/**
 * Updates the data directory. Resolves with what was updated and what was refused (and why); rejects with a
 * `DataLockedError` when another update holds the lock, and with an Error for problems of the directory itself
 * (not writable, disk full) — in every case the set in force stays as it was.
 *
 * @example
 * const r = await updateData({ dataDir: '/var/lib/riskcheck', only: ['tor'] })
 * if (!r.ok) console.error(r.failed)
 */
export async function updateData(options: UpdateOptions): Promise<UpdateResult> {
  const dataDir = resolve(options.dataDir)
  const selected = [...new Set(options.only && options.only.length > 0 ? options.only : DATA_SOURCE_NAMES)]
  for (const name of selected) if (!DATA_SOURCES[name]) throw new TypeError(`unknown data source: ${String(name)}`)
  for (const name of Object.keys(options.sources ?? {})) if (!(DATA_SOURCE_NAMES as readonly string[]).includes(name)) throw new TypeError(`unknown data source: ${name}`)
  const clock = options.now ?? (() => new Date())
  const emit = (e: UpdateEvent) => {
    try {
      options.onEvent?.(e)
    } catch {
      // a failing reporter does not stop the update
    }
  }
  return withDataLock(
    dataDir,
    async (lock) => {
      const now = clock()
      const base = readBase(dataDir)
      const id = newSetId(dataDir, now)
      const stage = stagingPath(dataDir, id)
      rmSync(join(dataDir, 'staging'), { recursive: true, force: true })
      mkdirSync(stage, { recursive: true })
      const result: UpdateResult = { data_dir: dataDir, ok: false, installed: null, previous: base.id, updated: [], failed: [], pruned: [] }
      const run: UpdateRun = { options, dataDir, now, base, id, stage, result, emit, step: (st) => options.onStep?.(st) }
      try {
        // 1. fetch and check
        const got = await fetchSources(run, selected)
        if (got.size === 0) return result
        // 2. carry over what was not fetched
        const sources = carryOver(run, got)
        // 3. rebuild what depends on a fetched source
        const built = [...rebuildIpFlags(run, got, sources), ...rebuildFreeList(run, got)]
        run.step('built')
        // 4. check the whole set
        checkSet(run, sources, built)
        // 5. install: rename into sets/, switch the pointer
        lock.assertHeld()
        return installStaged(run, got)
      } finally {
        rmSync(stage, { recursive: true, force: true })
        removeIfEmpty(join(dataDir, 'staging'))
      }
    },
    options.lock,
  )
}

/** One update under way: its options, the set it starts from, the new set's id and staging folder, its result. */
interface UpdateRun {
  options: UpdateOptions
  dataDir: string
  now: Date
  base: Base
  id: string
  stage: string
  result: UpdateResult
  emit: (e: UpdateEvent) => void
  step: (s: UpdateStep) => void
}

/** Fetches and checks the selected sources into the staging folder, two at a time; a refused one goes to `failed`. */
async function fetchSources(run: UpdateRun, selected: readonly DataSourceName[]): Promise<Map<DataSourceName, FetchedSource>> {
  const got = new Map<DataSourceName, FetchedSource>()
  const deadHosts = new Map<string, DownloadError>()
  await inPool(selected, 2, (name) => fetchOne(run, name, got, deadHosts))
  removeEmptyDirs(run.stage)
  run.step('fetched')
  run.result.failed.sort((a, b) => DATA_SOURCE_NAMES.indexOf(a.name) - DATA_SOURCE_NAMES.indexOf(b.name))
  return got
}

/** Fetches one source; when it is refused, what it wrote is removed and the reason noted. */
async function fetchOne(run: UpdateRun, name: DataSourceName, got: Map<DataSourceName, FetchedSource>, deadHosts: Map<string, DownloadError>): Promise<void> {
  const { options, emit } = run
  const info = DATA_SOURCES[name]
  const written: string[] = []
  let networkError: DownloadError | undefined
  try {
    const fetchedSource = await fetchSource(name, {
      setDir: run.stage,
      now: run.now,
      override: options.sources?.[name] ?? null,
      upstreams: { ...DEFAULT_UPSTREAMS, ...(options.upstreams ?? {}) },
      force: options.force === true,
      download: (location, dest, o) => {
        emit({ type: 'fetch', source: name, location })
        written.push(dest)
        const opts: DownloadOptions = {
          maxBytes: info.maxBytes,
          idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
          onProgress: (received, total) => emit({ type: 'progress', source: name, location, received, total }),
          ...(options.fetch ? { fetch: options.fetch } : {}),
          ...(options.sleep ? { sleep: options.sleep } : {}),
          ...o,
        }
        return downloadOnce(location, dest, opts, deadHosts).catch((e: unknown) => {
          if (e instanceof DownloadError && e.failure !== undefined) networkError = e
          throw e
        })
      },
      previousEntries: async () => {
        const prev = run.base.sources[name]
        if (prev.origin === 'bundled') return countBundledEntries(name)
        return prev.entries
      },
    })
    got.set(name, fetchedSource)
    emit({ type: 'fetched', source: name, version: fetchedSource.source.version, entries: fetchedSource.source.entries, checksum: fetchedSource.source.checksum, notes: fetchedSource.notes })
  } catch (e) {
    for (const p of written) rmSync(p, { force: true })
    if (name === 'disposable') rmSync(join(run.stage, SET_FILES.disposable), { force: true })
    if (!(e instanceof SourceError) && !(e instanceof Error)) throw e
    const reason = (e as Error).message
    const unreachable = isUnreachableDownload(networkError)
    run.result.failed.push({ name, reason, ...(unreachable ? { unreachable: true as const } : {}) })
    emit({ type: 'refused', source: name, reason, network: networkError !== undefined })
  }
}

/** Every source of the new set: the fetched ones, and the others as they were (their files copied from the base set). */
function carryOver(run: UpdateRun, got: Map<DataSourceName, FetchedSource>): Record<DataSourceName, ManifestSource> {
  const { base, stage } = run
  const sources = {} as Record<DataSourceName, ManifestSource>
  for (const name of DATA_SOURCE_NAMES) {
    const fresh = got.get(name)
    if (fresh) {
      sources[name] = fresh.source
      continue
    }
    const prev = base.sources[name]
    if (prev.origin !== 'bundled' && base.dir) for (const f of prev.files) carryFile(base.dir, stage, f.path)
    sources[name] = prev
  }
  return sources
}

/** The flags databases: rebuilt from every IP list when one of them was fetched, else carried over. */
function rebuildIpFlags(run: UpdateRun, got: Map<DataSourceName, FetchedSource>, sources: Record<DataSourceName, ManifestSource>): ManifestBuilt[] {
  const { base, stage, now } = run
  const built: ManifestBuilt[] = []
  if (!IP_LIST_SOURCES.some((n) => got.has(n))) {
    if (base.dir)
      for (const b of base.built.filter((x) => x.path === SET_FILES.flags || x.path === SET_FILES.asnFlags)) {
        carryFile(base.dir, stage, b.path)
        built.push(b)
      }
    return built
  }
  for (const n of IP_LIST_SOURCES) if (sources[n].origin === 'bundled') sources[n] = copyBundledLists(n, stage)
  const inputs: ListInput[] = []
  for (const n of IP_LIST_SOURCES)
    for (const f of sources[n].files) {
      const file = listFileOf(f.path)
      if (file) inputs.push({ file, path: join(stage, f.path) })
    }
  let flags
  try {
    flags = buildIpFlags(inputs, Math.floor(now.getTime() / 1000))
  } catch (e) {
    throw new Error(`building the flags database failed: ${(e as Error).message}`)
  }
  writeIpFlags(join(stage, 'ip'), flags, now)
  for (const rel of [SET_FILES.flags, SET_FILES.asnFlags]) {
    const h = sha256File(join(stage, rel))
    built.push({ path: rel, bytes: h.bytes, sha256: h.sha256, from: [...IP_LIST_SOURCES] })
    run.emit({ type: 'built', file: rel })
  }
  return built
}

/** The free-provider list less the disposable domains: rebuilt when the disposable list was fetched, else carried over. */
function rebuildFreeList(run: UpdateRun, got: Map<DataSourceName, FetchedSource>): ManifestBuilt[] {
  const { base, stage, now } = run
  const disposable = got.get('disposable')?.disposable
  if (!disposable) {
    const built: ManifestBuilt[] = []
    if (base.dir)
      for (const b of base.built.filter((x) => x.path === SET_FILES.free)) {
        carryFile(base.dir, stage, b.path)
        built.push(b)
      }
    return built
  }
  const { kept, removed } = subtractDisposable(readBundledFree(), disposable)
  writeFileSync(join(stage, SET_FILES.free), `${freeListHeader(now, removed.length)}\n${kept.join('\n')}\n`)
  const h = sha256File(join(stage, SET_FILES.free))
  run.emit({ type: 'built', file: SET_FILES.free })
  return [{ path: SET_FILES.free, bytes: h.bytes, sha256: h.sha256, from: ['disposable'] }]
}

/** Checks the staged set (the rebuilt flags open, every file has its size) and writes its manifest. */
function checkSet(run: UpdateRun, sources: Record<DataSourceName, ManifestSource>, built: ManifestBuilt[]): void {
  const { stage, id, now } = run
  const manifest: DataManifest = { format: MANIFEST_FORMAT, id, created_at: now.toISOString(), riskcheck: VERSION, sources, built }
  if (built.some((b) => b.path === SET_FILES.flags)) {
    try {
      openMmdb(join(stage, SET_FILES.flags), 'flags', 'flags')
      JSON.parse(readFileSync(join(stage, SET_FILES.asnFlags), 'utf8'))
    } catch (e) {
      throw new Error(`the rebuilt flags data does not open: ${(e as Error).message}`)
    }
  }
  for (const f of [...Object.values(sources).flatMap((s) => s.files), ...built]) {
    const p = join(stage, f.path)
    if (!existsSync(p) || statSync(p).size !== f.bytes) throw new Error(`set check failed: ${f.path} is missing or has the wrong size`)
  }
  writeFileDurably(join(stage, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  run.step('manifest-written')
}

/** Installs the staged set, fills in the result and prunes old sets. */
function installStaged(run: UpdateRun, got: Map<DataSourceName, FetchedSource>): UpdateResult {
  const { dataDir, id, result, base } = run
  installSet(dataDir, id)
  result.installed = id
  for (const [name, f] of got)
    result.updated.push({ name, version: f.source.version, entries: f.source.entries, checksum: f.source.checksum, upstream: f.source.upstream, notes: f.notes })
  const order = (n: DataSourceName) => DATA_SOURCE_NAMES.indexOf(n)
  result.updated.sort((a, b) => order(a.name) - order(b.name))
  result.failed.sort((a, b) => order(a.name) - order(b.name))
  result.ok = result.failed.length === 0
  run.emit({ type: 'installed', set: id, previous: base.id })
  run.step('installed')
  result.pruned = pruneSets(dataDir, Math.max(2, run.options.keep ?? 3))
  return result
}

/** Removes a directory when it is empty (an update leaves no empty `staging/` behind). */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir)
  } catch {
    // not there, or not empty: nothing to do
  }
}

/**
 * One download, unless its host already proved unreachable in this update (DNS failure, refused, unreachable): then
 * it fails at once with that host's failure, without touching the network again.
 */
async function downloadOnce(location: string, dest: string, opts: DownloadOptions, deadHosts: Map<string, DownloadError>) {
  let host: string | null = null
  if (localPathOf(location) === null) {
    try {
      host = new URL(location).host
    } catch {
      host = null
    }
  }
  const dead = host !== null ? deadHosts.get(host) : undefined
  if (dead) throw new DownloadError(dead.message, dead.status, dead.failure)
  try {
    return await download(location, dest, opts)
  } catch (e) {
    if (host !== null && isUnreachableDownload(e)) deadHosts.set(host, e as DownloadError)
    throw e
  }
}

/**
 * Points the data directory back at the set installed before the one in force (the previous update's data), under
 * the lock. Returns the set now in force. Throws when there is no older set.
 */
export async function rollbackData(options: { dataDir: string; lock?: LockOptions }): Promise<{ set: string; previous: string }> {
  const dataDir = resolve(options.dataDir)
  return withDataLock(
    dataDir,
    async () => {
      const current = readPointer(dataDir)
      if (current === null) throw new Error(`${dataDir} has no installed data set`)
      const older = listSets(dataDir).filter((s) => s < current)
      for (const id of older.reverse()) {
        try {
          const m = readSetManifest(dataDir, id)
          if (findSetFileProblem(dataDir, m) !== null) continue
        } catch {
          continue
        }
        switchPointer(dataDir, id)
        return { set: id, previous: current }
      }
      throw new Error(`${dataDir} has no older data set to roll back to`)
    },
    options.lock,
  )
}
