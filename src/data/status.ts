/**
 * `riskcheck data status`, `rc.dataStatus()` and the server's start notice: per source its version, the date of its
 * data, its age and whether it is older than the source's documented maximum age (./catalog.ts).
 */
import { NOT_INSTALLED } from './bundled.js'
import { DATA_SOURCE_NAMES, DATA_SOURCES, type DataSourceName } from './catalog.js'
import type { DataSet } from './data-set.js'
import type { SourceOrigin } from './manifest.js'

/** One source's freshness. */
export interface SourceStatus {
  name: DataSourceName
  /** its name in `metadata.data_sources`, with the version */
  label: string
  version: string
  origin: SourceOrigin
  /** where it was fetched from (null: the bundled data) */
  upstream: string | null
  /** ISO date-time the data is from; null when unknown (counts as stale) */
  data_date: string | null
  fetched_at: string | null
  /** seconds since data_date (null when unknown; 0 for a date in the future) */
  age_seconds: number | null
  max_age_seconds: number
  /** false for a bundled source whose optional package is not installed (`npm install --omit=optional`) */
  installed: boolean
  /** older than its maximum age, or of an unknown date (a source that is not installed is not stale) */
  stale: boolean
}

/** The freshness of the data in use. */
export interface DataStatus {
  /** the data directory (null: none configured, the bundled data answers) */
  data_dir: string | null
  /** `bundled` or the id of the set in use */
  set: string
  created_at: string | null
  /** true when any source is stale */
  stale: boolean
  /** names of the stale sources */
  stale_sources: DataSourceName[]
  /** names of the sources that are not installed (lookups answer without them) */
  not_installed: DataSourceName[]
  sources: SourceStatus[]
  /** a problem with the data directory (the set could not be read, so the bundled or an older set answers) */
  problem: string | null
}

/**
 * The status of a data set at `now`.
 *
 * @example computeDataStatus(getBundledDataSet(), null, new Date()).stale_sources // ['tor', …]
 */
export function computeDataStatus(set: DataSet, dataDir: string | null, now: Date, problem: string | null = null): DataStatus {
  const t = now.getTime()
  const sources: SourceStatus[] = DATA_SOURCE_NAMES.map((name) => {
    const s = set.sources[name]
    const date = s.data_date === null ? NaN : Date.parse(s.data_date)
    const age = Number.isFinite(date) ? Math.max(0, Math.floor((t - date) / 1000)) : null
    const max = Math.floor(DATA_SOURCES[name].maxAgeMs / 1000)
    const installed = !(s.origin === 'bundled' && s.version === NOT_INSTALLED)
    return {
      name,
      label: set.labels[name],
      version: s.version,
      origin: s.origin,
      upstream: s.upstream,
      data_date: s.data_date,
      fetched_at: s.fetched_at,
      age_seconds: age,
      max_age_seconds: max,
      installed,
      stale: installed && (age === null || age > max),
    }
  })
  const stale = sources.filter((s) => s.stale).map((s) => s.name)
  const notInstalled = sources.filter((s) => !s.installed).map((s) => s.name)
  return { data_dir: dataDir, set: set.id, created_at: set.createdAt, stale: stale.length > 0, stale_sources: stale, not_installed: notInstalled, sources, problem }
}

/** `3d 4h`, `5h 12m`, `40m`, `12s`: an age for people. */
export function formatAge(seconds: number | null): string {
  if (seconds === null) return 'unknown'
  const d = Math.floor(seconds / 86_400)
  const h = Math.floor((seconds % 86_400) / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`
  if (m > 0) return `${m}m`
  return `${seconds}s`
}

/** What to tell an operator about the data in use: how loud, and one line naming the command that fixes it. */
export interface DataNotice {
  /**
   * `info` while the bundled snapshot answers (it ages from the day the package was built, by design); `warn` when an
   * installed data set went stale (its updates stopped)
   */
  level: 'info' | 'warn'
  message: string
}

/** The one command that fetches current data into `dataDir` (`DIR` when none is configured). */
export function updateCommandFor(dataDir: string | null): string {
  return `riskcheck data update --data-dir ${dataDir ?? 'DIR'}`
}

/**
 * The notice the server logs once at start about the data in use, or null when every source is fresh. It names the
 * stale sources by their data date and the one command that fixes it ({@link updateCommandFor}).
 *
 * @example dataNotice(rc.dataStatus())?.message // 'open data: the bundled snapshot answers (tor from 2024-02-27, …). Fetch current data with: riskcheck data update --data-dir DIR …'
 */
export function dataNotice(status: DataStatus): DataNotice | null {
  if (!status.stale) return null
  const stale = status.sources
    .filter((s) => s.stale)
    .map((s) => `${s.name} ${s.data_date === null ? 'undated' : `from ${s.data_date.slice(0, 10)}`} (max ${formatAge(s.max_age_seconds)})`)
    .join(', ')
  const fix = updateCommandFor(status.data_dir)
  if (status.set === 'bundled') {
    const then = status.data_dir ? '' : ', then give that --data-dir (or RISKCHECK_DATA_DIR) to serve and the lookups'
    return { level: 'info', message: `open data: the bundled snapshot answers (${stale}). Fetch current data with: ${fix}${then}` }
  }
  return { level: 'warn', message: `open data: data set ${status.set} in ${status.data_dir} is stale (${stale}). Fetch current data with: ${fix} (or serve --refresh-data 6h)` }
}
