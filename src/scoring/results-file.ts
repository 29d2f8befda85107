/**
 * Reading stored answers and labels from files, streaming: results as JSON lines (lookup results, combined checks,
 * bulk rows, results pages — what `riskcheck <lookup> < inputs`, `riskcheck bulk` and the HTTP API write), a JSON
 * document (one result or an array), or a bulk results.csv; labels as CSV `input,label`.
 *
 * Lines are split by hand over large chunks (no per-line stream machinery) and each is parsed on its own, so a
 * million answers are read with the memory of one chunk; the `details` of each answer, which re-scoring does not
 * read, are skipped unparsed where the line allows (./answer-line.ts).
 */
import { createReadStream } from 'node:fs'
import { parseAnswerLine } from './answer-line.js'
import type { Label } from './backtest.js'

/** Where to read from: a path, a file URL, or a stream / async iterable of text or bytes. */
export type TextSource = string | URL | AsyncIterable<string | Uint8Array>

/** A result file that cannot be read as results (e.g. a results.csv without the `factors` column). */
export class ResultsFileError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ResultsFileError'
  }
}

/** Options of {@link readResults}. */
export interface ReadResultsOptions {
  /** `jsonl` (JSON lines or one JSON document) or `csv`; by default from the file name, else from the first character. */
  format?: 'jsonl' | 'csv'
  /** Called for each line that is not JSON (it is skipped and counted by the backtest as `not_a_result`). */
  onBadLine?: (line: number, message: string) => void
}

function open(source: TextSource): AsyncIterable<string | Uint8Array> {
  return typeof source === 'string' || source instanceof URL ? createReadStream(source, { highWaterMark: 1 << 20, encoding: 'utf8' }) : source
}

/**
 * The lines of a text stream, a chunk's worth at a time (LF or CRLF; a BOM dropped): one await per chunk, not per
 * line, so reading costs little more than splitting.
 */
async function* lineBatches(source: AsyncIterable<string | Uint8Array>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder('utf-8')
  let rest = ''
  let first = true
  for await (const chunk of source) {
    let text = rest + (typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }))
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
      first = false
    }
    const lines: string[] = []
    let start = 0
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      lines.push(text.charCodeAt(nl - 1) === 13 ? text.slice(start, nl - 1) : text.slice(start, nl))
      start = nl + 1
    }
    rest = text.slice(start)
    if (rest.length > MAX_DOCUMENT_CHARS)
      throw new ResultsFileError(`a line longer than ${MAX_DOCUMENT_CHARS} characters: write the results as JSON lines (one per line)`)
    if (lines.length > 0) yield lines
  }
  rest += decoder.decode()
  if (rest !== '') yield [rest.endsWith('\r') ? rest.slice(0, -1) : rest]
}

/** Lines one at a time (for the small files: labels). */
async function* linesOf(source: AsyncIterable<string | Uint8Array>): AsyncGenerator<string> {
  for await (const batch of lineBatches(source)) yield* batch
}

const FORMULA_PREFIX = /^'[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/

/** A cell as written before formula escaping (`'+14155550100` → `+14155550100`). */
export function unescapeCsvCell(s: string): string {
  return FORMULA_PREFIX.test(s) ? s.slice(1) : s
}

function countQuotes(s: string): number {
  let n = 0
  for (let i = s.indexOf('"'); i !== -1; i = s.indexOf('"', i + 1)) n++
  return n
}

/** The fields of one CSV record (RFC 4180 quoting; the text may hold line breaks inside quotes). */
function splitCsv(text: string): string[] {
  if (!text.includes('"')) return text.split(',')
  const out: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"'
          i++
        } else quoted = false
      } else field += ch
    } else if (ch === '"' && field === '') quoted = true
    else if (ch === ',') {
      out.push(field)
      field = ''
    } else field += ch
  }
  out.push(field)
  return out
}

/** Longest CSV record read (a record this long is a stray quote swallowing the lines after it). */
const MAX_RECORD_CHARS = 1024 * 1024

/**
 * Assembles CSV records from lines: a line with an odd number of quotes opens a field that continues on the next
 * lines until the quotes balance. Blank lines between records are skipped. (The scoring entry point keeps its own
 * small reader rather than load the bulk module's: this one works on batches of lines, which is what makes a
 * million-row results.csv fast, and a record is capped so a stray quote cannot take the whole file into memory.)
 */
function csvAssembler() {
  let pending: string | null = null
  let quotes = 0
  let line = 0
  let startLine = 0
  return {
    /** The record a line completes, or null (blank line, or a quoted field still open). */
    push(text: string): string[] | null {
      line++
      if (pending !== null) {
        pending += '\n' + text
        quotes += countQuotes(text)
        if (pending.length > MAX_RECORD_CHARS)
          throw new ResultsFileError(`line ${startLine}: a quoted field runs on for more than ${MAX_RECORD_CHARS} characters (a stray quote?)`)
      } else {
        if (text === '') return null
        quotes = countQuotes(text)
        if (quotes % 2 === 0) return splitCsv(text)
        pending = text
        startLine = line
      }
      if (quotes % 2 === 1) return null
      const record = splitCsv(pending)
      pending = null
      return record
    },
    /** Throws when the input ended inside a quoted field. */
    end(): void {
      if (pending !== null) throw new ResultsFileError(`line ${startLine}: the CSV ends inside a quoted field (the record starting ${JSON.stringify(pending.slice(0, 40))})`)
    },
  }
}

/** CSV records one at a time (for labels). */
async function* csvRecords(lines: AsyncIterable<string>): AsyncGenerator<string[]> {
  const csv = csvAssembler()
  for await (const line of lines) {
    const record = csv.push(line)
    if (record) yield record
  }
  csv.end()
}

/** Turns results.csv records into bulk rows with what a backtest needs (input, action, risk_score, factors, error). */
function csvRowReader() {
  let columns: { input: number; action: number; score: number; factors: number; error: number } | null = null
  return (r: string[]): unknown | undefined => {
    if (!columns) {
      const header = r.map((h) => h.trim())
      const [input, action, score, factors, error] = ['input', 'action', 'risk_score', 'factors', 'error'].map((c) => header.indexOf(c)) as [number, number, number, number, number]
      if (input < 0 || action < 0)
        throw new ResultsFileError(`this CSV is not a riskcheck results.csv (its header has no input and action columns: ${header.slice(0, 8).join(', ')})`)
      if (factors < 0)
        throw new ResultsFileError(
          'this results.csv has no factors column (it was written by a riskcheck before 0.2, which did not keep the factors); export the results again, or use the JSON results',
        )
      columns = { input, action, score, factors, error }
      return undefined
    }
    const c = columns
    const err = c.error >= 0 ? (r[c.error] ?? '') : ''
    const f = r[c.factors] ?? ''
    const s = c.score >= 0 ? (r[c.score] ?? '') : ''
    return {
      input: unescapeCsvCell(r[c.input] ?? ''),
      action: r[c.action] || null,
      risk_score: s === '' ? null : Number(s),
      factors: f === '' ? [] : f.split(';'),
      error: err === '' ? null : err,
    }
  }
}

/** Largest JSON document read whole (JSON lines have no limit: they are read line by line). */
const MAX_DOCUMENT_CHARS = 256 * 1024 * 1024

function tryParse(line: string): unknown {
  try {
    const v = parseAnswerLine(line) as unknown
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : undefined
  } catch {
    return undefined
  }
}

/**
 * Stored answers of a results file a chunk's worth at a time (arrays of items, in file order) — what
 * {@link readResults} flattens. `backtest` takes these batches too (an array is read as its items), which saves a
 * step per answer on files of millions. Throws a {@link ResultsFileError} for a CSV that is not riskcheck's.
 */
export async function* readResultBatches(source: TextSource, options: ReadResultsOptions = {}): AsyncGenerator<unknown[]> {
  const name = typeof source === 'string' ? source : source instanceof URL ? source.pathname : ''
  let format = options.format ?? (/\.csv$/i.test(name) ? 'csv' : /\.(jsonl|ndjson|json)$/i.test(name) ? 'jsonl' : undefined)
  const csv = csvAssembler()
  const toRow = csvRowReader()
  let n = 0 // line number
  let sawJson = false
  let document: string | null = null // a JSON document over several lines, being collected
  let documentLines = 0
  for await (const lines of lineBatches(open(source))) {
    const items: unknown[] = []
    for (const line of lines) {
      n++
      if (document !== null) {
        // A line that is a whole result on its own means JSON lines after all, whose first line(s) were broken.
        const whole = line.length > 2 && line.charCodeAt(0) === 123 ? tryParse(line) : undefined
        if (whole !== undefined) {
          for (let k = 0; k < documentLines; k++) {
            options.onBadLine?.(n - documentLines + k, 'not JSON')
            items.push(undefined)
          }
          document = null
          sawJson = true
          items.push(whole)
          continue
        }
        document += '\n' + line
        documentLines++
        if (document.length > MAX_DOCUMENT_CHARS)
          throw new ResultsFileError(`line 1 is not JSON, and the file is too large to be one JSON document (more than ${MAX_DOCUMENT_CHARS} characters)`)
        continue
      }
      // Sniff the format on the first line: JSON starts with { or [; anything else is taken for CSV.
      if (format === undefined) {
        if (line.trim() === '') continue
        format = /^\s*[{[]/.test(line) ? 'jsonl' : 'csv'
      }
      if (format === 'csv') {
        const record = csv.push(line)
        if (record) {
          const row = toRow(record)
          if (row !== undefined) items.push(row)
        }
        continue
      }
      if (line.trim() === '') continue
      try {
        items.push(parseAnswerLine(line))
        sawJson = true
      } catch (e) {
        if (!sawJson) {
          document = line // not JSON lines but one document over several lines (a pretty-printed result, an array)
          documentLines = 1
        } else {
          options.onBadLine?.(n, (e as Error).message)
          items.push(undefined) // counted as not a result
        }
      }
    }
    if (items.length > 0) yield items
  }
  if (format === 'csv') csv.end()
  if (document !== null) {
    try {
      yield [JSON.parse(document)]
    } catch (e) {
      options.onBadLine?.(1, (e as Error).message)
      yield [undefined]
    }
  }
}

/**
 * The stored answers of a results file, one at a time, for {@link backtest}: JSON lines of lookup results, combined
 * checks or bulk rows (also HTTP envelopes and results pages), one JSON document, or a bulk results.csv (which must
 * have the `factors` column). Items carry what re-scoring reads; their `details` may be left out. Throws a
 * {@link ResultsFileError} for a CSV that is not riskcheck's. For millions of answers {@link readResultBatches} is
 * a little faster.
 *
 * @example
 * const report = await backtest(readResults('answers.jsonl'), policy)
 */
export async function* readResults(source: TextSource, options: ReadResultsOptions = {}): AsyncGenerator<unknown> {
  for await (const batch of readResultBatches(source, options)) yield* batch
}

/** A labels file that cannot be used; `line` is 1-based. */
export class LabelsFileError extends Error {
  constructor(
    message: string,
    readonly line: number | null,
  ) {
    super(line === null ? message : `line ${line}: ${message}`)
    this.name = 'LabelsFileError'
  }
}

/**
 * Reads labels: CSV with an `input` and a `label` column (a header naming them, or two columns without a header),
 * label `fraud` or `good` (any case). Throws a {@link LabelsFileError} naming the line of a bad label or of an input
 * labelled both ways.
 *
 * @example
 * const labels = await readLabels('labels.csv') // Map { 'jane@example.com' => 'good', … }
 */
export async function readLabels(source: TextSource): Promise<Map<string, Label>> {
  const out = new Map<string, Label>()
  const lineOf = new Map<string, number>()
  let inputCol = 0
  let labelCol = 1
  let n = 0
  for await (const record of csvRecords(linesOf(open(source)))) {
    n++
    const cells = record.map((c) => c.trim())
    if (n === 1) {
      const lower = cells.map((c) => c.toLowerCase())
      if (lower.includes('label')) {
        labelCol = lower.indexOf('label')
        inputCol = lower.indexOf('input') >= 0 ? lower.indexOf('input') : labelCol === 0 ? 1 : 0
        continue
      }
    }
    const input = unescapeCsvCell(cells[inputCol] ?? '')
    const raw = (cells[labelCol] ?? '').toLowerCase()
    if (input === '') throw new LabelsFileError('the input is empty', n)
    if (raw !== 'fraud' && raw !== 'good') throw new LabelsFileError(`the label must be fraud or good (got ${JSON.stringify(cells[labelCol] ?? '')})`, n)
    const key = input.toLowerCase()
    const before = out.get(key)
    if (before !== undefined && before !== raw)
      throw new LabelsFileError(`${JSON.stringify(input)} is labelled ${raw} here and ${before} on line ${lineOf.get(key)}`, n)
    out.set(key, raw)
    lineOf.set(key, n)
  }
  return out
}
