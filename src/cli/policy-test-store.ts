/**
 * `riskcheck policy test FILE --db FILE | --database-url URL --org ORG_ID`: the backtest of a candidate policy over an
 * org's answers in the service's database, labelled by its outcomes — what `admin policy set --dry-run` shows, through
 * the same `backtestOrg`, with the reports of `policy test` (text, --json, --html) and nothing written.
 */
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import type { CheckContextName } from '../schema.js'
import type { Labels, PolicyFile } from '../scoring/index.js'
import { openAdminDatabase, type AdminDatabase } from './admin-database.js'
import { renderBacktestHtml } from './backtest-html.js'
import { formatBacktestText, labelSourceLine, reportSkipped, type ReportHeading } from './backtest-text.js'
import type { DatabaseTarget } from './database.js'
import { EXIT, messageOf, type CliIO } from './shared.js'

/** An org's answers in a service database. */
export interface StoreSource {
  target: DatabaseTarget
  orgId: string
  /** Key mode of the answers: the answer log keeps live keys' answers only. */
  mode: 'live'
}

/** What {@link runStoreTest} needs besides its source. */
export interface StoreTestOptions {
  source: StoreSource
  file: PolicyFile
  policyPath: string
  /** Labels of `--labels` / `--outcomes` (instead of the org's outcomes), or null. */
  labels: Labels | null
  labelsFile: string | null
  /** With labels of an outcomes file: the compared forms of an answer's inputs, to find its label by. */
  keysOf?: (item: unknown) => readonly string[]
  /** False with --no-outcomes. */
  useOutcomes: boolean
  context: CheckContextName | undefined
  json: boolean
  html: string | undefined
  shown: number
}

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Opens the database without changing it: a SQLite file must exist; a PostgreSQL schema that is behind is refused
 * (riskcheck admin migrate brings it up). An exit code, with the reason on stderr, when it cannot be opened.
 */
async function openForReading(target: DatabaseTarget, io: CliIO, prefix: string): Promise<{ database: AdminDatabase } | { code: number }> {
  if (target.kind === 'sqlite' && !existsSync(target.path)) {
    io.stderr.write(`${prefix}: --db ${target.path}: no such file (the SQLite file riskcheck serve writes)\n`)
    return { code: EXIT.usage }
  }
  try {
    return { database: await openAdminDatabase(target, { migrate: false }) }
  } catch (e) {
    io.stderr.write(`${prefix}: cannot open the database: ${messageOf(e)}\n`)
    return { code: EXIT.failed }
  }
}

/** Runs the backtest over the org's answers and prints its report; the exit code. */
export async function runStoreTest(o: StoreTestOptions, io: CliIO, prefix: string, nowMs = Date.now()): Promise<number> {
  const opened = await openForReading(o.source.target, io, prefix)
  if ('code' in opened) return opened.code
  const { database } = opened
  try {
    const org = await database.store.getOrg(o.source.orgId, nowMs)
    if (!org) {
      io.stderr.write(`${prefix}: --org ${o.source.orgId}: no such org in this database (riskcheck admin org list names them)\n`)
      return EXIT.usage
    }
    const { outcomeStoreOf } = await import('../server/store/open-storage.js')
    const { backtestOrg } = await import('../server/org-backtest.js')
    const bt = await backtestOrg({
      policies: database.policies,
      outcomes: o.useOutcomes ? outcomeStoreOf(database.store) : undefined,
      orgId: org.id,
      policy: o.file.policy,
      nowMs,
      maxChanges: o.json ? Number.MAX_SAFE_INTEGER : Math.max(o.shown, o.html !== undefined ? 100 : 0),
      labels: o.labels,
      ...(o.keysOf ? { keysOf: o.keysOf } : {}),
      useOutcomes: o.useOutcomes,
      ...(o.context !== undefined ? { context: o.context } : {}),
    })
    const { report, since } = bt
    reportSkipped(report, io, prefix)
    const heading: ReportHeading = {
      policy: o.policyPath,
      version: o.file.version,
      results: `the ${o.source.mode} answers of ${org.id} in the last 7 days (since ${iso(since)})`,
      context: o.context ?? null,
    }
    if (o.html !== undefined) {
      try {
        await writeFile(o.html, renderBacktestHtml(report, heading, o.file.policy))
      } catch (e) {
        io.stderr.write(`${prefix}: cannot write ${o.html}: ${(e as Error).message}\n`)
        return EXIT.usage
      }
    }
    if (o.json) {
      const { changes, ...rest } = report
      const head = {
        policy: { file: o.policyPath, version: o.file.version },
        org: org.id,
        mode: o.source.mode,
        answers: { since: iso(since), read: report.read },
        context: heading.context,
        // `labels` is the report's (fraud and good before and after); where they came from is this.
        label_source: { source: bt.labelSource, file: o.labelsFile, outcomes: bt.outcomes },
        changes,
      }
      io.stdout.write(`${JSON.stringify({ ...head, ...rest })}\n`)
    } else io.stdout.write(`${labelSourceLine(bt, o.labelsFile)}\n${formatBacktestText(report, heading, o.shown)}`)
    return EXIT.ok
  } finally {
    await database.close()
  }
}
