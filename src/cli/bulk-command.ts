/**
 * `riskcheck bulk`: one lookup type over a file of inputs, through the bulk engine, with a progress bar, and the
 * results written as CSV or JSON lines in input order. Flags: {@link bulkHelpText}; input, output, progress, Ctrl-C
 * and exit codes: docs/decisions.md, "Command line" → "`bulk`".
 */
import { createReadStream } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import type { EventEmitter } from 'node:events'
import { createInterface } from 'node:readline'
import { once } from 'node:events'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import cliProgress from 'cli-progress'
import { createBulkEngine } from '../bulk/index.js'
import { fieldStart, MAX_CSV_FIELD, readCsvRecords, type CsvPosition } from '../bulk/csv.js'
import { MAX_BULK_INPUTS } from '../bulk/engine.js'
import type { BulkEngine } from '../bulk/types.js'
import { isRiskcheckError } from '../errors.js'
import { createRiskcheck, type Riskcheck } from '../riskcheck.js'
import { BULK_TYPES, type BulkJob, type BulkType } from '../schema.js'
import { EXIT, exitCodeOf, GLOBAL_FLAGS, LISTS_FLAG, LISTS_HELP, messageOf, listsFromFlags, OUTCOMES_FLAG, OUTCOMES_HELP, outcomesFromFlags, optionsFromFlags, policyFromFlags, printError, stderrWarning, UsageError, wholeNumber, type CliCommand, type CliIO } from './shared.js'

/** The CLI's streams, plus where Ctrl-C comes from (default `process`); tests pass an EventEmitter. */
export type BulkCliIO = CliIO & { signals?: Pick<EventEmitter, 'once' | 'removeListener'> }

type Options = NonNullable<ParseArgsConfig['options']>

const BULK_FLAGS: Options = {
  type: { type: 'string', short: 't' },
  column: { type: 'string' },
  out: { type: 'string', short: 'o' },
  format: { type: 'string' },
  country: { type: 'string' },
  'no-smtp': { type: 'boolean' },
  name: { type: 'string' },
  'progress-interval': { type: 'string' },
}

const POLL_MS = 200
const DEFAULT_CONCURRENCY = 32

/** The help text of `riskcheck bulk`. */
export function bulkHelpText(): string {
  return [
    'Usage: riskcheck bulk --type TYPE [FILE|-] [flags]',
    '',
    `  --type TYPE          ${BULK_TYPES.join(', ')} (dashes work too: domain-age, email-auth, phone-type)`,
    '  FILE | -             one input per line, or CSV with a header (.csv or --column); - or nothing: stdin',
    '  --column NAME        the CSV column with the inputs (default: the only column, or the one named after the type)',
    '  --out PATH           write results there (.csv → CSV, otherwise JSON lines); the job is printed on stdout',
    '  --format csv|jsonl   output format (default: from --out, else jsonl)',
    '  --country CC         default country of phone numbers without + (ISO 3166 alpha-2)',
    '  --no-smtp            emails: skip the SMTP mailbox check',
    '  --name NAME          job name (at most 200 characters)',
    '  --concurrency N      lookups at once (default 32)',
    '  --progress-interval MS  plain progress lines every MS when stderr is not a terminal (default 2000)',
    `  ${LISTS_HELP[0].padEnd(20)} ${LISTS_HELP[1]}`,
    `  ${OUTCOMES_HELP[0].padEnd(20)} ${OUTCOMES_HELP[1]}`,
    '  plus the lookup flags of riskcheck --help (--mode, --offline, --dns-server, --now, …)',
    '',
    'Ctrl-C cancels: inputs not reached are not checked; the rows done so far are written.',
    'Exit codes: 0 completed · 1 failed · 2 rejected · 64 bad usage · 130 cancelled',
    '',
  ].join('\n')
}

function parseType(v: unknown): BulkType {
  const t = typeof v === 'string' ? v.replace(/-/g, '_') : ''
  if (!BULK_TYPES.includes(t as BulkType)) throw new UsageError(`--type must be one of ${BULK_TYPES.join(', ')} (got ${String(v ?? 'nothing')})`)
  return t as BulkType
}

/** The CSV column holding the inputs: `--column`, else the only column, else the one named after the type. */
function pickColumn(header: string[], wanted: string | undefined, type: BulkType): number {
  const names = header.map((h) => h.trim())
  if (wanted !== undefined) {
    const i = names.indexOf(wanted)
    const j = i >= 0 ? i : names.findIndex((n) => n.toLowerCase() === wanted.toLowerCase())
    if (j < 0) throw new UsageError(`no column "${wanted}" in the CSV header (columns: ${names.join(', ')})`)
    return j
  }
  if (names.length === 1) return 0
  const guesses = type === 'domain_age' || type === 'email_auth' ? ['domain', 'url', 'email'] : type === 'phone_type' ? ['phone'] : [type]
  for (const g of guesses) {
    const i = names.findIndex((n) => n.toLowerCase() === g)
    if (i >= 0) return i
  }
  throw new UsageError(`the CSV has several columns; pick one with --column (columns: ${names.join(', ')})`)
}

async function readInputs(source: NodeJS.ReadableStream, csv: boolean, column: string | undefined, type: BulkType): Promise<string[]> {
  const inputs: string[] = []
  const tooMany = () => new UsageError(`at most ${MAX_BULK_INPUTS.toLocaleString('en-US')} inputs per job; split the file`)
  if (csv) {
    let col = -1
    // a quote never closed made the rest of the file one input: refused, as the dashboard refuses such text
    const onUnclosed = (field: string) => {
      throw new UsageError(`a quoted field of the CSV is never closed (the one starting "${fieldStart(field)}"): close its quote or remove it`)
    }
    // so is a field too long to keep (say a quote opened by mistake, closed many lines on) rather than cut and looked up
    const onTruncated = (kept: string, at: CsvPosition) => {
      throw new UsageError(
        `a field of the CSV is longer than ${MAX_CSV_FIELD.toLocaleString('en-US')} characters (record ${at.record}, from line ${at.line}, starting "${fieldStart(kept)}"): ` +
          'if a quote opened there by mistake, close or remove it; else shorten the field',
      )
    }
    for await (const record of readCsvRecords(source as AsyncIterable<string | Buffer>, { onUnclosed, onTruncated })) {
      if (col < 0) {
        col = pickColumn(record, column, type)
        continue
      }
      inputs.push(record[col] ?? '')
      if (inputs.length > MAX_BULK_INPUTS) throw tooMany()
    }
    if (col < 0) throw new UsageError('the CSV input is empty (expected a header row)')
    return inputs
  }
  const rl = createInterface({ input: source, crlfDelay: Infinity })
  for await (const line of rl) {
    // A UTF-8 byte order mark (Windows editors) is not part of the first input, as readCsvRecords drops it for CSV.
    inputs.push(inputs.length === 0 ? line.replace(/^\uFEFF/, '') : line)
    if (inputs.length > MAX_BULK_INPUTS) {
      rl.close()
      throw tooMany()
    }
  }
  return inputs
}

async function write(out: NodeJS.WritableStream, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out as EventEmitter, 'drain')
}

const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US')

function fmtDuration(s: number): string {
  if (!Number.isFinite(s)) return '?'
  if (s < 60) return `${Math.ceil(s)}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.ceil(s % 60)).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/** Progress on stderr: a cli-progress bar on a terminal, plain lines otherwise. */
function createProgress(io: CliIO, total: number, intervalMs: number) {
  const tty = Boolean((io.stderr as { isTTY?: boolean }).isTTY)
  const started = performance.now()
  let lastLine = 0
  const rate = (done: number) => done / Math.max(0.001, (performance.now() - started) / 1000)
  const bar = tty
    ? new cliProgress.SingleBar(
        {
          stream: io.stderr,
          format: 'bulk [{bar}] {percentage}% | {value}/{total} | {rate}/s | ETA {eta_formatted}',
          hideCursor: true,
          fps: 5,
          etaBuffer: 50,
        },
        cliProgress.Presets.shades_classic,
      )
    : null
  bar?.start(total, 0, { rate: '0' })
  const line = (done: number) => {
    const r = rate(done)
    const pct = total === 0 ? 100 : Math.floor((done / total) * 100)
    const eta = r > 0 ? fmtDuration((total - done) / r) : '?'
    io.stderr.write(`riskcheck bulk: ${fmtInt(done)}/${fmtInt(total)} (${pct}%) · ${fmtInt(r)}/s · ETA ${done >= total ? '0s' : eta}\n`)
  }
  return {
    update(done: number) {
      if (bar) bar.update(done, { rate: fmtInt(rate(done)) })
      else if (performance.now() - lastLine >= intervalMs) {
        lastLine = performance.now()
        line(done)
      }
    },
    stop(done: number) {
      if (bar) {
        bar.update(done, { rate: fmtInt(rate(done)) })
        bar.stop()
      } else line(done)
    },
    seconds: () => (performance.now() - started) / 1000,
  }
}

function summary(job: BulkJob, seconds: number): string {
  const r = job.results
  return (
    `riskcheck bulk: ${job.status} — ${fmtInt(job.total_rows)} inputs, ${fmtInt(job.unique_inputs)} unique, ${fmtInt(job.processed)} processed: ` +
    `approve ${r.approve} · verify ${r.verify} · review ${r.review} · block ${r.block} · errors ${r.errors} · skipped ${r.skipped} · ` +
    `cache hits ${r.cache_hits} · credits ${job.credits_used} · ${seconds.toFixed(1)}s\n`
  )
}

async function writeResults(engine: BulkEngine, job: BulkJob, format: 'csv' | 'jsonl', out: NodeJS.WritableStream): Promise<void> {
  if (format === 'csv') {
    for await (const chunk of await engine.resultsCsv(job.id)) await write(out, String(chunk))
    return
  }
  let cursor: string | null = null
  do {
    const page = await engine.results(job.id, { cursor, limit: 1000 })
    if (page.data.length > 0) await write(out, page.data.map((r) => JSON.stringify(r)).join('\n') + '\n')
    cursor = page.next_cursor
  } while (cursor !== null)
}

/** Runs `riskcheck bulk` with the arguments after `bulk`; returns the exit code. */
async function runBulk(args: string[], io: BulkCliIO): Promise<number> {
  let values: Record<string, unknown>
  let positionals: string[]
  let type: BulkType
  let format: 'csv' | 'jsonl'
  let concurrency: number
  let interval: number
  try {
    const parsed = parseArgs({ args, options: { ...GLOBAL_FLAGS, ...LISTS_FLAG, ...OUTCOMES_FLAG, ...BULK_FLAGS }, allowPositionals: true, strict: true })
    values = parsed.values as Record<string, unknown>
    positionals = parsed.positionals
    if (values.help) {
      io.stdout.write(bulkHelpText())
      return 0
    }
    type = parseType(values.type)
    if (positionals.length > 1) throw new UsageError(`bulk takes one input file (got ${positionals.length})`)
    const out = values.out as string | undefined
    const f = values.format ?? (out && /\.csv$/i.test(out) ? 'csv' : 'jsonl')
    if (f !== 'csv' && f !== 'jsonl') throw new UsageError(`--format must be csv or jsonl (got ${String(f)})`)
    format = f
    concurrency = Math.min(1024, wholeNumber('concurrency', values.concurrency, 1) ?? DEFAULT_CONCURRENCY)
    interval = wholeNumber('progress-interval', values['progress-interval'], 0) ?? 2000
  } catch (e) {
    printError(io, 'riskcheck bulk', e)
    return EXIT.usage
  }

  const policy = await policyFromFlags(values, io, 'riskcheck bulk')
  if (policy === null) return 64

  // Read the inputs.
  const file = positionals[0]
  const csv = values.column !== undefined || (file !== undefined && /\.csv$/i.test(file))
  let inputs: string[]
  try {
    const source = file === undefined || file === '-' ? io.stdin : createReadStream(file)
    if (source === io.stdin && io.stdin.isTTY) throw new UsageError('no input file given and stdin is a terminal (see riskcheck bulk --help)')
    inputs = await readInputs(source, csv, values.column as string | undefined, type)
  } catch (e) {
    printError(io, 'riskcheck bulk', e)
    return EXIT.usage
  }

  // Open the output file first, so a bad path fails before any lookup runs.
  let outFile: FileHandle | null = null
  if (values.out !== undefined) {
    try {
      outFile = await open(values.out as string, 'w')
    } catch (e) {
      io.stderr.write(`riskcheck bulk: cannot write ${String(values.out)}: ${messageOf(e)}\n`)
      return EXIT.usage
    }
  }

  let rc: Riskcheck
  let engine: BulkEngine
  try {
    const lists = await listsFromFlags(values as Record<string, unknown>)
    const outcomes = await outcomesFromFlags(values as Record<string, unknown>)
    rc = createRiskcheck({
      ...optionsFromFlags(values, io.env),
      ...(policy ? { scoring: policy.overrides } : {}),
      ...(lists ? { lists } : {}),
      ...(outcomes ? { outcomes } : {}),
      onWarning: stderrWarning(io),
    })
    engine = createBulkEngine(rc.env, { concurrency })
  } catch (e) {
    await outFile?.close()
    printError(io, 'riskcheck bulk', e)
    return EXIT.usage
  }

  const signals = io.signals ?? process
  let interrupted = false
  let jobId: string | null = null
  const onSigint = () => {
    interrupted = true
    io.stderr.write('\nriskcheck bulk: cancelling — inputs not reached are skipped, rows done so far are kept\n')
    if (jobId) void engine.cancel(jobId).catch(() => undefined)
  }
  signals.once('SIGINT', onSigint)
  let poll: NodeJS.Timeout | undefined
  try {
    let job: BulkJob
    try {
      job = await engine.create({
        type,
        inputs,
        ...(values.name !== undefined ? { name: values.name as string } : {}),
        ...(values.country !== undefined ? { country: values.country as string } : {}),
        ...(values['no-smtp'] ? { smtp: false } : {}),
      })
    } catch (e) {
      const error = isRiskcheckError(e) ? { code: e.code, message: e.message } : { code: 'INTERNAL_ERROR', message: messageOf(e) }
      io.stderr.write(JSON.stringify({ error }) + '\n')
      return exitCodeOf(e)
    }
    jobId = job.id
    inputs = [] // the engine holds what it needs
    if (interrupted) await engine.cancel(job.id)
    const progress = createProgress(io, job.unique_inputs, interval)
    poll = setInterval(() => {
      void engine.get(job.id).then(
        (j) => progress.update(j.processed),
        () => undefined,
      )
    }, POLL_MS)
    const final = await engine.waitFor(job.id)
    clearInterval(poll)
    progress.stop(final.processed)

    if (outFile) {
      const out = outFile.createWriteStream()
      outFile = null // the stream owns the file now and closes it
      let failure: unknown = null
      out.on('error', (e) => (failure ??= e))
      try {
        await writeResults(engine, final, format, out)
      } finally {
        out.end()
        await once(out, 'close').catch(() => undefined)
      }
      if (failure) throw failure
      io.stdout.write(JSON.stringify(final) + '\n')
    } else {
      await writeResults(engine, final, format, io.stdout)
    }
    io.stderr.write(summary(final, progress.seconds()))
    if (final.status === 'cancelled') return EXIT.interrupted
    return final.status === 'completed' ? EXIT.ok : EXIT.failed
  } catch (e) {
    printError(io, 'riskcheck bulk', e)
    return EXIT.failed
  } finally {
    await outFile?.close()
    if (poll) clearInterval(poll)
    signals.removeListener('SIGINT', onSigint)
    // (the SMTP source keeps the process alive itself while its sessions QUIT)
    await engine.close()
    await rc.close()
  }
}

/** The `riskcheck bulk` command (registered in ./commands.ts). */
export const bulkCommand: CliCommand = {
  name: 'bulk',
  summary: 'check a file of inputs of one type (folded, with progress); results as CSV or JSON lines',
  run: (args, io) => runBulk(args, io as BulkCliIO),
}
