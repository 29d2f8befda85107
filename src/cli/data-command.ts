/**
 * `riskcheck data …`: keep the open data fresh (docs/data.md).
 *
 *   riskcheck data update   [--data-dir DIR] [--only NAME,…] [--source NAME=URL|FILE …] [--force] [--wait SECONDS] [--json]
 *   riskcheck data status   [--data-dir DIR] [--now ISO] [--json]
 *   riskcheck data rollback [--data-dir DIR] [--json]
 *   riskcheck data sources  [--json]
 *
 * DIR defaults to the RISKCHECK_DATA_DIR environment variable. Progress goes to stderr (bars on a terminal, plain
 * lines otherwise), results to stdout.
 */
import { instantOfText } from '../instant.js'
import { parseArgs } from 'node:util'
import cliProgress from 'cli-progress'
import { DATA_SOURCE_NAMES, DATA_SOURCES, isDataSourceName, type DataSourceName } from '../data/catalog.js'
import { DataLockedError } from '../data/lock.js'
import { ipDataInstallCommand } from '../sources/ip/data-paths.js'
import { readDataStatus } from '../data/provider.js'
import { formatAge, updateCommandFor, type DataStatus } from '../data/status.js'
import { rollbackData, updateData, type UpdateEvent } from '../data/update.js'
import { EXIT, printError, UsageError, type CliCommand, type CliIO } from './shared.js'

/** The environment variable naming the data directory. */
export const DATA_DIR_ENV = 'RISKCHECK_DATA_DIR'

const HELP = `Usage:
  riskcheck data update   [--data-dir DIR] [--only NAME,…] [--source NAME=URL|FILE …] [--force] [--wait SECONDS] [--json]
  riskcheck data status   [--data-dir DIR] [--now ISO] [--json]
  riskcheck data rollback [--data-dir DIR] [--json]
  riskcheck data sources  [--json]

update    fetch every source (or --only some) from its upstream, check it, rebuild the compiled data and install a
          new data set atomically; a refused source keeps its data in use. Each failure is printed once, as it
          happens. A host that cannot be reached (DNS failure, refused, unreachable) is not retried. Exit 0: all
          updated; 1: a source was refused or failed (named on stderr); 69: no upstream could be reached (offline?),
          nothing changed; 75: another update holds the lock.
status    per source its version, date, age and whether it is older than its maximum age, and when something is
          stale the command that fetches current data. Exit 0: fresh; 1: stale, or the data directory's set cannot
          be used.
rollback  point the data directory back at the set installed before the one in force.
sources   the sources with their upstream, license, change rate and maximum age.

  --data-dir DIR        the data directory (default: $${DATA_DIR_ENV}; status without one reports the bundled data)
  --only NAME,…         update only these sources: ${DATA_SOURCE_NAMES.join(', ')}
  --source NAME=LOC     fetch NAME from a mirror URL or a local file/directory in the upstream's format (repeatable)
  --force               accept a source that shrank to less than half of the data in use
  --wait SECONDS        wait up to this long for another update to finish (default: fail at once)
  --now ISO             the time to compute ages at (status; default: the current time)
  --json                print the result as JSON
`

type Values = Record<string, unknown>

function dataDirOf(values: Values, io: CliIO): string | null {
  const v = (values['data-dir'] as string | undefined) ?? io.env?.[DATA_DIR_ENV]
  return v && v.trim() !== '' ? v : null
}

function parseOnly(v: unknown): DataSourceName[] | undefined {
  if (v === undefined) return undefined
  const names = String(v)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  if (names.length === 0) throw new UsageError('--only needs at least one source name')
  for (const n of names) if (!isDataSourceName(n)) throw new UsageError(`--only: unknown source "${n}" (known: ${DATA_SOURCE_NAMES.join(', ')})`)
  return names as DataSourceName[]
}

function parseSources(v: unknown): Partial<Record<DataSourceName, string>> {
  const out: Partial<Record<DataSourceName, string>> = {}
  for (const item of (v as string[] | undefined) ?? []) {
    const eq = item.indexOf('=')
    const name = eq > 0 ? item.slice(0, eq).trim() : ''
    const loc = eq > 0 ? item.slice(eq + 1).trim() : ''
    if (!isDataSourceName(name) || loc === '') throw new UsageError(`--source must be NAME=URL|FILE with NAME one of ${DATA_SOURCE_NAMES.join(', ')} (got ${JSON.stringify(item)})`)
    out[name] = loc
  }
  return out
}

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`

/** Progress of the downloads on stderr: bars on a terminal for large files, plain lines otherwise. */
function createReporter(io: CliIO, quietBars: boolean) {
  const tty = Boolean((io.stderr as { isTTY?: boolean }).isTTY) && !quietBars
  const multi = tty
    ? new cliProgress.MultiBar(
        { stream: io.stderr, format: '{source} [{bar}] {percentage}% | {got} of {size}', hideCursor: true, fps: 5, clearOnComplete: false },
        cliProgress.Presets.shades_classic,
      )
    : null
  const bars = new Map<string, cliProgress.SingleBar>()
  const quarters = new Map<string, number>()
  const say = (line: string) => (multi ? multi.log(`${line}\n`) : io.stderr.write(`${line}\n`))
  return {
    event(e: UpdateEvent) {
      switch (e.type) {
        case 'fetch':
          if (!tty) say(`riskcheck data: ${e.source}: fetching ${e.location}`)
          return
        case 'progress': {
          if (e.total === null || e.total < 4_000_000) return
          if (multi) {
            let bar = bars.get(e.location)
            if (!bar) {
              bar = multi.create(e.total, 0, { source: e.source.padEnd(10), got: mb(0), size: mb(e.total) })
              bars.set(e.location, bar)
            }
            bar.update(e.received, { got: mb(e.received) })
            return
          }
          const q = Math.floor((e.received / e.total) * 4)
          if (q > (quarters.get(e.location) ?? 0) && q < 4) {
            quarters.set(e.location, q)
            say(`riskcheck data: ${e.source}: ${mb(e.received)} of ${mb(e.total)} (${q * 25}%)`)
          }
          return
        }
        case 'fetched':
          say(
            `riskcheck data: ${e.source}: ${e.entries.toLocaleString('en-US')} entries, version ${e.version}` +
              `${e.checksum === 'verified' ? ', checksum verified' : ''}${e.notes.length ? ` (${e.notes.join('; ')})` : ''}`,
          )
          return
        case 'refused':
          say(`riskcheck data: ${e.source}: ${e.network ? 'FAILED' : 'REFUSED'}: ${e.reason}`)
          return
        case 'built':
          if (!tty) say(`riskcheck data: built ${e.file}`)
          return
        case 'installed':
          return
      }
    },
    stop() {
      multi?.stop()
    },
  }
}

async function runUpdate(values: Values, io: CliIO): Promise<number> {
  const dataDir = dataDirOf(values, io)
  if (!dataDir) throw new UsageError(`data update needs --data-dir DIR (or ${DATA_DIR_ENV})`)
  const only = parseOnly(values.only)
  const sources = parseSources(values.source)
  const wait = values.wait === undefined ? 0 : Number(values.wait)
  if (!Number.isFinite(wait) || wait < 0) throw new UsageError(`--wait must be a number of seconds (got ${String(values.wait)})`)
  const json = values.json === true
  const reporter = createReporter(io, json)
  let result
  try {
    result = await updateData({
      dataDir,
      ...(only ? { only } : {}),
      sources,
      force: values.force === true,
      lock: { waitMs: wait * 1000 },
      onEvent: (e) => reporter.event(e),
    })
  } catch (e) {
    reporter.stop()
    if (e instanceof DataLockedError) {
      io.stderr.write(`riskcheck data update: ${e.message}\n`)
      if (json) io.stdout.write(`${JSON.stringify({ ok: false, error: { code: 'locked', message: e.message } })}\n`)
      return EXIT.locked
    }
    throw e
  }
  reporter.stop()
  if (json) io.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  else if (result.installed) io.stdout.write(`installed data set ${result.installed} in ${result.data_dir}${result.previous ? ` (previous: ${result.previous})` : ''}\n`)
  else io.stdout.write(`nothing installed; the data in use in ${result.data_dir} did not change\n`)
  // Each failure was printed as it happened (the reporter); here only what they add up to.
  if (result.ok) return EXIT.ok
  const offline = !result.installed && result.failed.length > 0 && result.failed.every((f) => f.unreachable)
  io.stderr.write(
    offline
      ? 'riskcheck data update: no upstream could be reached (see above); run it where they are reachable, or give local copies with --source NAME=FILE\n'
      : `riskcheck data update: ${result.failed.length} of ${result.failed.length + result.updated.length} sources failed: ${result.failed.map((f) => f.name).join(', ')}\n`,
  )
  return offline ? EXIT.unavailable : EXIT.failed
}

function statusText(s: DataStatus): string {
  const head = s.data_dir
    ? s.set === 'bundled'
      ? `data directory ${s.data_dir}: no data set installed; the bundled data answers`
      : `data set ${s.set} in ${s.data_dir} (created ${s.created_at})`
    : 'the bundled data (no data directory)'
  const rows = [['source', 'version', 'date', 'age', 'max age', 'state']]
  for (const src of s.sources)
    rows.push(
      src.installed
        ? [src.name, src.version, src.data_date?.slice(0, 10) ?? '?', formatAge(src.age_seconds), formatAge(src.max_age_seconds), src.stale ? 'STALE' : 'fresh']
        : [src.name, '-', '-', '-', formatAge(src.max_age_seconds), 'NOT INSTALLED'],
    )
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)))
  const lines = rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd())
  const fix = s.stale ? [`Fetch current data with: ${updateCommandFor(s.data_dir)}${s.data_dir ? '' : ' (then give that --data-dir, or RISKCHECK_DATA_DIR, to serve and the lookups)'}`, ''] : []
  const missing =
    s.not_installed.length === 0
      ? []
      : [
          `${s.not_installed.join(', ')}: not installed (optional dependencies, left out by \`npm install --omit=optional\`); IP answers`,
          `have no location, ASN or AS name. Install: ${ipDataInstallCommand()}`,
          `or fetch them into a data directory: riskcheck data update --data-dir DIR`,
          '',
        ]
  return [head, ...(s.problem ? [`problem: ${s.problem}`] : []), '', ...lines, '', ...missing, ...fix].join('\n')
}

function runStatus(values: Values, io: CliIO): number {
  const dataDir = dataDirOf(values, io)
  let now = new Date()
  if (values.now !== undefined) {
    // the rule of every --now (src/instant.ts): `new Date(text)` took `1` and read an offset-less time locally
    const ms = instantOfText(String(values.now).trim())
    if (ms === null)
      throw new UsageError(`--now must be an ISO 8601 date (2026-01-31) or a date-time with Z or an offset (2026-01-31T12:00:00Z) (got ${JSON.stringify(String(values.now).slice(0, 80))})`)
    now = new Date(ms)
  }
  const s = readDataStatus({ dataDir, now })
  io.stdout.write(values.json === true ? `${JSON.stringify(s, null, 2)}\n` : statusText(s))
  return s.stale || s.problem ? EXIT.failed : EXIT.ok
}

async function runRollback(values: Values, io: CliIO): Promise<number> {
  const dataDir = dataDirOf(values, io)
  if (!dataDir) throw new UsageError(`data rollback needs --data-dir DIR (or ${DATA_DIR_ENV})`)
  const r = await rollbackData({ dataDir })
  io.stdout.write(values.json === true ? `${JSON.stringify(r)}\n` : `data set ${r.set} is in force again in ${dataDir} (was ${r.previous})\n`)
  return EXIT.ok
}

function runSources(values: Values, io: CliIO): number {
  const list = DATA_SOURCE_NAMES.map((n) => {
    const s = DATA_SOURCES[n]
    return { name: n, data_sources_name: s.label, title: s.title, upstream: s.upstream, license: s.license, changes: s.changes, max_age_seconds: s.maxAgeMs / 1000, source_override: s.override }
  })
  if (values.json === true) io.stdout.write(`${JSON.stringify(list, null, 2)}\n`)
  else for (const s of list) io.stdout.write(`${s.name} (${s.data_sources_name}@…): ${s.title}\n  upstream: ${s.upstream}\n  license: ${s.license}\n  changes: ${s.changes}; stale after ${formatAge(s.max_age_seconds)}\n  --source ${s.name}=…: ${s.source_override}\n`)
  return EXIT.ok
}

/** Runs `riskcheck data <sub> …`; returns the exit code. */
export async function runDataCommand(args: string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = args
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    io.stdout.write(HELP)
    return sub === undefined ? 64 : 0
  }
  let values: Values
  try {
    values = parseArgs({
      args: rest,
      options: {
        'data-dir': { type: 'string' },
        only: { type: 'string' },
        source: { type: 'string', multiple: true },
        force: { type: 'boolean' },
        wait: { type: 'string' },
        now: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: false,
      strict: true,
    }).values as Values
    if (values.help) {
      io.stdout.write(HELP)
      return EXIT.ok
    }
    switch (sub) {
      case 'update':
        return await runUpdate(values, io)
      case 'status':
        return runStatus(values, io)
      case 'rollback':
        return await runRollback(values, io)
      case 'sources':
        return runSources(values, io)
      default:
        throw new UsageError(`unknown data command "${sub}" (update, status, rollback, sources)`)
    }
  } catch (e) {
    if (e instanceof UsageError || (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
      printError(io, 'riskcheck data', e)
      return EXIT.usage
    }
    printError(io, `riskcheck data ${sub}`, e)
    return EXIT.failed
  }
}

/** The `data` command (registered by the CLI). */
export const dataCommand: CliCommand = {
  name: 'data',
  summary: 'keep the open data fresh: data update | status | rollback | sources [--data-dir DIR]',
  run: (args, io) => runDataCommand(args, io),
}
