/**
 * `riskcheck policy`: policy files and backtests, offline (no network, no credits).
 *
 *   riskcheck policy check FILE [--json]
 *   riskcheck policy test --policy FILE --results RESULTS [--labels LABELS | --outcomes OUTCOMES] [--context C] [--json]
 *                         [--html REPORT] [--changes N] [--format csv|jsonl]
 *   riskcheck policy test FILE --db DB | --database-url URL --org ORG_ID …   (./policy-test-store.ts)
 *   riskcheck policy schema
 *
 * Exit codes: 0 done (check: the file is valid) · 64 bad usage, an invalid policy file, results / labels that
 * cannot be read, an unknown org · 1 an unexpected failure, a database that cannot be opened.
 */
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { CONTEXTS, type CheckContextName } from '../schema.js'
import {
  createBacktest,
  DEFAULT_POLICY,
  formatPolicyIssues,
  LabelsFileError,
  loadPolicyFile,
  policyJsonSchema,
  PolicyFileError,
  readLabels,
  readResultBatches,
  ResultsFileError,
  type BacktestChange,
  type FactorCode,
  type Labels,
  type PolicyFile,
} from '../scoring/index.js'
import { OutcomesFileError, readOutcomesFile } from '../outcomes/file.js'
import { labelsFromEntries, resultInputKeys } from '../outcomes/labels.js'
import { renderBacktestHtml } from './backtest-html.js'
import { fmtInt, formatBacktestText, reportSkipped, type ReportHeading } from './backtest-text.js'
import { databaseTarget, postgresLocation } from './database.js'
import type { StoreSource } from './policy-test-store.js'
import { EXIT, haveServerPackages, UsageError, type CliCommand, type CliIO } from './shared.js'

const HELP = `Usage:
  riskcheck policy check FILE [--json]
      Validate a policy file (JSON or YAML): every error with its path and line; a summary when it is good.
  riskcheck policy test --policy FILE --results RESULTS [--labels LABELS | --outcomes OUTCOMES]
                        [--context C] [--json] [--html REPORT] [--changes N] [--format csv|jsonl]
      Re-score stored answers under the policy (no network, no credits) and report what would change.
  riskcheck policy test FILE (--db DB | --database-url URL) --org ORG_ID [--mode live]
                        [--labels LABELS | --outcomes OUTCOMES | --no-outcomes] [--context C] [--json] [--html REPORT]
      The same over an org's answers of the last 7 days in the service's database, labelled by the org's outcomes
      (what admin policy set --dry-run reports; nothing is written, no policy is applied).
  riskcheck policy schema
      Print the JSON Schema of policy files (also docs/policy.schema.json in the package).

  --policy FILE       the candidate policy (JSON or YAML); or name it as the one argument
  --results RESULTS   what riskcheck wrote: JSON lines of lookup or combined-check results, bulk rows as JSON
                      lines or results.csv (with its factors column), HTTP results pages; - reads stdin
  --labels LABELS     CSV input,label with label fraud or good: adds fraud caught / good customers held, and
                      a sweep of the block and review thresholds
  --outcomes OUTCOMES outcomes as labels: CSV (header input,type,outcome[,note,created_at] or
                      request_id,outcome) or JSON lines (.jsonl) of the same fields; fraud, chargeback,
                      account_takeover → fraud, legitimate → good, delivery outcomes are not labels; the
                      latest outcome of an input or request wins
  --context C         judge every answer in this context (${CONTEXTS.join(', ')}); default: each answer's own
  --json              the whole report as JSON, with every change
  --html REPORT       also write a self-contained HTML page (matrix, histogram by label, sweeps, changes)
  --changes N         changes listed in the text report (default 20)
  --format csv|jsonl  format of RESULTS (default: from its name, else from its first character)
  --db DB             the service's SQLite file (riskcheck serve --db); it must exist
  --database-url URL  the service's PostgreSQL (?schema=NAME picks the schema); its schema must be current
                      (riskcheck admin migrate); one of --db and --database-url, never both
  --org ORG_ID        whose answers (of the last 7 days, as the answer log keeps them) to re-score
  --mode live         the key mode of the answers and outcomes: live (the answer log keeps live keys' answers only)
  --no-outcomes       no labels (by default the org's current outcomes are the labels; --labels or --outcomes
                      replace them)

Exit codes: 0 done (check: valid) · 64 bad usage, an invalid policy, unreadable results or labels, an unknown org
· 1 failure (a database that cannot be opened)
`

async function write(out: NodeJS.WritableStream, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain')
}

/** How a policy differs from the default policy, one line per part it changes. */
export function describePolicy(file: PolicyFile): string[] {
  const o = file.overrides
  const d = DEFAULT_POLICY
  const lines: string[] = []
  const list = (items: string[], max = 8) => (items.length > max ? `${items.slice(0, max).join(', ')}, … (${items.length} in all)` : items.join(', '))
  const weights = Object.entries(o.weights ?? {}).filter(([k, v]) => d.weights[k as FactorCode] !== v)
  if (weights.length > 0) lines.push(`weights: ${list(weights.map(([k, v]) => `${k} ${d.weights[k as FactorCode]} → ${v}`))}`)
  const effects = Object.entries(o.effects ?? {}).filter(([k, v]) => d.effects[k as FactorCode] !== v)
  if (effects.length > 0) lines.push(`effects: ${list(effects.map(([k, v]) => `${k} ${d.effects[k as FactorCode]} → ${v}`))}`)
  const t = file.policy.thresholds
  if (o.thresholds) lines.push(`thresholds: verify from ${t.medium}, review from ${t.high}, block from ${t.critical} (default ${d.thresholds.medium}, ${d.thresholds.high}, ${d.thresholds.critical})`)
  const actions = Object.entries(o.actions ?? {}).filter(([k, v]) => d.actions[k as 'low'] !== v)
  if (actions.length > 0) lines.push(`actions: ${actions.map(([k, v]) => `${k} → ${v} (default ${d.actions[k as 'low']})`).join(', ')}`)
  if (o.rules) lines.push(`rules (in order): ${file.policy.rules.map((r) => `${r.name} → ${r.action}`).join(', ') || 'none'}`)
  if (o.confidence) lines.push(`confidence: medium from ${file.policy.confidence.medium}, low from ${file.policy.confidence.low} uncertain factors`)
  if (o.messages) lines.push(`messages: ${Object.keys(o.messages).join(', ')}`)
  if (o.lists) lines.push(`lists: block match → ${file.policy.lists.block ?? 'no action'}, allow match → ${file.policy.lists.allow ?? 'no action'}`)
  if (o.velocity) lines.push(`velocity: ${JSON.stringify(o.velocity)}`)
  for (const [name, overlay] of Object.entries(o.contexts ?? {})) {
    const parts: string[] = []
    if (overlay?.thresholds) parts.push(`thresholds ${JSON.stringify(overlay.thresholds)}`)
    if (overlay?.weights) parts.push(`weights ${list(Object.entries(overlay.weights).map(([k, v]) => `${k} ${v}`), 5)}`)
    if (overlay?.rules) parts.push(`${overlay.rules.length} rule(s) first`)
    if (overlay?.velocity) parts.push(`velocity ${JSON.stringify(overlay.velocity)}`)
    lines.push(`context ${name} (replaced): ${parts.join('; ') || 'no changes'}`)
  }
  if (lines.length === 0) lines.push('no changes from the default policy')
  return lines
}

/** Loads a policy for a command, printing every problem; null when it cannot be used (exit 64). */
async function loadOrReport(path: string, io: CliIO, prefix: string): Promise<PolicyFile | null> {
  try {
    return await loadPolicyFile(path)
  } catch (e) {
    if (e instanceof PolicyFileError) {
      io.stderr.write(`${prefix}: ${path} is not a valid policy (${e.issues.length} error${e.issues.length === 1 ? '' : 's'}):\n`)
      for (const l of formatPolicyIssues(e.issues)) io.stderr.write(`  ${l}\n`)
    } else io.stderr.write(`${prefix}: cannot read ${path}: ${(e as Error).message}\n`)
    return null
  }
}

async function runCheck(args: string[], io: CliIO): Promise<number> {
  let values: Record<string, unknown>
  let positionals: string[]
  try {
    const parsed = parseArgs({ args, options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true })
    values = parsed.values
    positionals = parsed.positionals
    if (values.help) {
      io.stdout.write(HELP)
      return EXIT.ok
    }
    if (positionals.length !== 1) throw new UsageError(`policy check takes one file (got ${positionals.length})`)
  } catch (e) {
    io.stderr.write(`riskcheck policy check: ${(e as Error).message}\n`)
    return EXIT.usage
  }
  const path = positionals[0] as string
  let file: PolicyFile
  try {
    file = await loadPolicyFile(path)
  } catch (e) {
    if (!(e instanceof PolicyFileError)) {
      io.stderr.write(`riskcheck policy check: cannot read ${path}: ${(e as Error).message}\n`)
      return EXIT.usage
    }
    if (values.json) io.stdout.write(JSON.stringify({ file: path, valid: false, errors: e.issues, warnings: [] }, null, 2) + '\n')
    else {
      io.stdout.write(`${path}: invalid — ${e.issues.length} error${e.issues.length === 1 ? '' : 's'}\n`)
      for (const l of formatPolicyIssues(e.issues)) io.stdout.write(`  ${l}\n`)
    }
    return EXIT.usage
  }
  if (values.json) {
    io.stdout.write(
      JSON.stringify({ file: path, valid: true, version: file.version, description: file.description, errors: [], warnings: file.warnings, changes: describePolicy(file) }, null, 2) + '\n',
    )
    return EXIT.ok
  }
  io.stdout.write(`${path}: valid — version ${file.version}${file.description ? ` — ${file.description}` : ''}\n`)
  for (const l of describePolicy(file)) io.stdout.write(`  ${l}\n`)
  for (const l of formatPolicyIssues(file.warnings)) io.stdout.write(`  warning: ${l}\n`)
  return EXIT.ok
}

/** The arguments of `policy test`, checked. */
interface TestArgs {
  values: Record<string, unknown>
  /** The candidate policy file (`--policy FILE`, or the one positional). */
  policy: string
  context: CheckContextName | undefined
  shown: number
  format: 'csv' | 'jsonl' | undefined
  /** The service database whose org's answers are re-scored; null: `--results`. */
  store: StoreSource | null
}

const TEST_OPTIONS = {
  policy: { type: 'string' },
  results: { type: 'string' },
  labels: { type: 'string' },
  outcomes: { type: 'string' },
  context: { type: 'string' },
  json: { type: 'boolean' },
  html: { type: 'string' },
  changes: { type: 'string' },
  format: { type: 'string' },
  db: { type: 'string' },
  'database-url': { type: 'string' },
  org: { type: 'string' },
  mode: { type: 'string' },
  'no-outcomes': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const

/** Where the answers come from when `--db`, `--database-url` or `--org` is given; a UsageError for a wrong mix. */
function storeSource(values: Record<string, unknown>): StoreSource | null {
  // Flags only (not RISKCHECK_DB and the like): a variable set for `serve` must not turn `--results` into a store.
  const target = databaseTarget(values, (flag) => `--${flag}`)
  if (target === null && values.org === undefined) {
    if (typeof values.results !== 'string') throw new UsageError('--results RESULTS is required (stored answers to re-score), or --db FILE / --database-url URL with --org ORG_ID')
    for (const flag of ['mode', 'no-outcomes'])
      if (values[flag] !== undefined) throw new UsageError(`--${flag} is for an org's answers in the service's database (--db FILE or --database-url URL, with --org ORG_ID)`)
    return null
  }
  if (target === null) throw new UsageError('--org reads the answers the service logged: give its database too (--db FILE or --database-url URL)')
  if (typeof values.org !== 'string' || values.org === '') throw new UsageError('--org ORG_ID is required with --db / --database-url (whose answers to re-score)')
  if (values.results !== undefined) throw new UsageError('--results and --db / --database-url exclude each other: the answers come from a file or from the service database')
  if (values.format !== undefined) throw new UsageError('--format is the format of --results; the service database needs none')
  if (values['no-outcomes'] === true && (values.labels !== undefined || values.outcomes !== undefined))
    throw new UsageError('--no-outcomes and --labels / --outcomes cannot be used together (one source of labels, or none)')
  const mode = (values.mode as string | undefined) ?? 'live'
  if (mode === 'test') throw new UsageError("--mode test: the service logs the answers of live keys only (test keys' answers are fixtures), so there are none to re-score")
  if (mode !== 'live') throw new UsageError(`--mode must be live or test (got ${mode})`)
  if (target.kind === 'postgres') {
    if (!/^postgres(ql)?:\/\//.test(target.url)) throw new UsageError('--database-url must start with postgres:// or postgresql://')
    postgresLocation(target.url)
  }
  return { target, orgId: values.org, mode }
}

/** Parses and checks the arguments of `policy test`; a UsageError for bad usage. */
function parseTestArgs(args: string[]): TestArgs | 'help' {
  const parsed = parseArgs({ args, options: TEST_OPTIONS, allowPositionals: true, strict: true })
  const values = parsed.values as Record<string, unknown>
  if (values.help) return 'help'
  if (parsed.positionals.length > 1) throw new UsageError(`policy test takes one policy file (got ${parsed.positionals.length}: ${parsed.positionals.join(' ')})`)
  if (parsed.positionals.length === 1 && values.policy !== undefined) throw new UsageError('give the policy file once: --policy FILE or FILE')
  const policy = (values.policy as string | undefined) ?? parsed.positionals[0]
  if (typeof policy !== 'string') throw new UsageError('--policy FILE is required (the candidate policy; or name it as the one argument)')
  const store = storeSource(values)
  if (values.labels !== undefined && values.outcomes !== undefined) throw new UsageError('--labels and --outcomes cannot be used together (one source of labels)')
  if (values.context !== undefined && !(CONTEXTS as readonly string[]).includes(values.context as string))
    throw new UsageError(`--context must be one of ${CONTEXTS.join(', ')} (got ${String(values.context)})`)
  const shown = values.changes === undefined ? 20 : Number(values.changes)
  if (!Number.isInteger(shown) || shown < 0) throw new UsageError(`--changes must be a whole number (got ${String(values.changes)})`)
  if (values.format !== undefined && values.format !== 'csv' && values.format !== 'jsonl') throw new UsageError(`--format must be csv or jsonl (got ${String(values.format)})`)
  return { values, policy, context: values.context as CheckContextName | undefined, shown, format: values.format as 'csv' | 'jsonl' | undefined, store }
}

/** The labels of `--outcomes FILE` or `--labels FILE` (null: neither); a UsageError when the file cannot be used. */
async function fileLabels(values: Record<string, unknown>, io: CliIO, prefix: string): Promise<Labels | null> {
  if (values.outcomes !== undefined) {
    const path = values.outcomes as string
    try {
      const { labels, summary } = labelsFromEntries(await readOutcomesFile(path))
      if (summary.delivery > 0) io.stderr.write(`${prefix}: note: ${path}: ${fmtInt(summary.delivery)} delivery outcome(s) (bounced, delivered, spam_complaint) are not labels\n`)
      return labels
    } catch (e) {
      throw new UsageError(`${path}: ${e instanceof OutcomesFileError ? e.message : `cannot read: ${(e as Error).message}`}`)
    }
  }
  if (values.labels !== undefined) {
    try {
      return await readLabels(values.labels as string)
    } catch (e) {
      throw new UsageError(`${values.labels as string}: ${e instanceof LabelsFileError ? e.message : `cannot read: ${(e as Error).message}`}`)
    }
  }
  return null
}

async function runTest(args: string[], io: CliIO): Promise<number> {
  const prefix = 'riskcheck policy test'
  let t: TestArgs
  try {
    const got = parseTestArgs(args)
    if (got === 'help') {
      io.stdout.write(HELP)
      return EXIT.ok
    }
    t = got
    if (t.values.results === '-' && (io.stdin as { isTTY?: boolean }).isTTY) throw new UsageError('--results - reads stdin, which is a terminal')
  } catch (e) {
    io.stderr.write(`${prefix}: ${(e as Error).message}\n`)
    return EXIT.usage
  }
  const { values } = t
  const file = await loadOrReport(t.policy, io, prefix)
  if (!file) return EXIT.usage
  for (const l of formatPolicyIssues(file.warnings)) io.stderr.write(`${prefix}: warning: ${t.policy}: ${l}\n`)
  let labels: Labels | null
  try {
    labels = await fileLabels(values, io, prefix)
  } catch (e) {
    io.stderr.write(`${prefix}: ${(e as Error).message}\n`)
    return EXIT.usage
  }
  if (t.store) {
    // the org's store is the service's: its packages must be there
    if (!haveServerPackages('riskcheck policy test', io)) return EXIT.failed
    const { runStoreTest } = await import('./policy-test-store.js')
    return runStoreTest({ source: t.store, file, policyPath: t.policy, labels, labelsFile: (values.labels ?? values.outcomes ?? null) as string | null, ...(values.outcomes !== undefined ? { keysOf: resultInputKeys } : {}), useOutcomes: values['no-outcomes'] !== true, context: t.context, json: Boolean(values.json), html: values.html as string | undefined, shown: t.shown }, io, prefix)
  }
  return testOnResults(t, file, labels, io, prefix)
}

/** `policy test --results RESULTS`: re-scores the answers of a file (or stdin). */
async function testOnResults(t: TestArgs, file: PolicyFile, labels: Labels | null, io: CliIO, prefix: string): Promise<number> {
  const { values, context, shown, format } = t
  const json = Boolean(values.json)
  const heading: ReportHeading = { policy: t.policy, version: file.version, results: values.results as string, context: context ?? null }
  const badLines: number[] = []
  let badLineCount = 0
  // With --json the changes are streamed out as they are found (none kept in memory); the text and HTML reports
  // keep only those they list.
  let firstChange = true
  let pendingOut: Promise<void> | null = null
  const onChange = json
    ? (c: BacktestChange) => {
        const text = (firstChange ? '\n' : ',\n') + JSON.stringify(c)
        firstChange = false
        if (!io.stdout.write(text) && !pendingOut) pendingOut = once(io.stdout, 'drain').then(() => void (pendingOut = null))
      }
    : undefined
  const run = createBacktest(file.policy, {
    labels,
    // an outcomes file's labels are keyed by the inputs' compared forms: an answer is found by its inputs' as well
    ...(values.outcomes !== undefined ? { keysOf: resultInputKeys } : {}),
    ...(context !== undefined ? { context } : {}),
    maxChanges: json ? (values.html !== undefined ? 100 : 0) : Math.max(shown, values.html !== undefined ? 100 : 0),
    ...(onChange ? { onChange } : {}),
  })
  try {
    if (json) await write(io.stdout, `{"policy":${JSON.stringify({ file: heading.policy, version: file.version })},"results":${JSON.stringify(heading.results)},"context":${JSON.stringify(heading.context)},"changes":[`)
    const source = values.results === '-' ? (io.stdin as AsyncIterable<string | Uint8Array>) : (values.results as string)
    const items = readResultBatches(source, {
      ...(format ? { format } : {}),
      onBadLine: (line) => {
        badLineCount++
        if (badLines.length < 5) badLines.push(line)
      },
    })
    for await (const item of items) {
      run.add(item)
      if (pendingOut) await pendingOut
    }
  } catch (e) {
    if (json) io.stdout.write('\n]}\n')
    if (e instanceof ResultsFileError || (e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'EISDIR') {
      io.stderr.write(`${prefix}: ${values.results as string}: ${(e as Error).message}\n`)
      return EXIT.usage
    }
    throw e
  }
  const report = run.report()
  if (badLineCount > 0)
    io.stderr.write(`${prefix}: warning: ${fmtInt(badLineCount)} line(s) of ${heading.results} are not JSON and were skipped (line ${badLines.join(', ')}${badLineCount > badLines.length ? ', …' : ''})\n`)
  reportSkipped(report, io, prefix)

  if (values.html !== undefined) {
    try {
      await writeFile(values.html as string, renderBacktestHtml(report, heading, file.policy))
    } catch (e) {
      io.stderr.write(`${prefix}: cannot write ${values.html as string}: ${(e as Error).message}\n`)
      return EXIT.usage
    }
  }
  if (json) {
    const { changes: _, ...rest } = report
    await write(io.stdout, `${firstChange ? '' : '\n'}],${JSON.stringify(rest).slice(1)}\n`)
  } else await write(io.stdout, formatBacktestText(report, heading, shown))
  return EXIT.ok
}

async function runPolicy(args: string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = args
  if (sub === 'check') return runCheck(rest, io)
  if (sub === 'test') return runTest(rest, io)
  if (sub === 'schema') {
    io.stdout.write(JSON.stringify(policyJsonSchema(), null, 2) + '\n')
    return EXIT.ok
  }
  if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
    io.stdout.write(HELP)
    return sub === undefined ? 64 : 0
  }
  io.stderr.write(`riskcheck policy: unknown subcommand "${sub}" (check, test or schema; see riskcheck policy --help)\n`)
  return EXIT.usage
}

/** The `riskcheck policy` command (registered in ./commands.ts). */
export const policyCommand: CliCommand = {
  name: 'policy',
  summary: 'policy files: check FILE (validate) · test --policy FILE --results RESULTS | --db DB --org ORG_ID (backtest) · schema',
  run: runPolicy,
}
