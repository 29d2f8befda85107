/**
 * Reading stored answers and labels from files, streaming: results as JSON lines (lookup results, combined checks,
 * bulk rows, results pages — what `riskcheck <lookup> < inputs`, `riskcheck bulk` and the HTTP API write), a JSON
 * document (one result or an array), or a bulk results.csv; labels as CSV `input,label`.
 *
 * Lines are split by hand over large chunks (no per-line stream machinery) and each is parsed on its own, so a
 * million answers are read with the memory of one chunk.
 */
import { createReadStream } from 'node:fs'
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
  return typeof source === 'string' || source instanceof URL ? createReadStream(source, { highWaterMark: 1 << 20 }) : source
}

/** Lines of a text stream (LF or CRLF; a BOM dropped), numbered from 1. */
async function* linesOf(source: AsyncIterable<string | Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8')
  let rest = ''
  let first = true
  for await (const chunk of source) {
    let text = rest + (typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }))
    if (first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
      first = false
    }
    let start = 0
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      yield text.charCodeAt(nl - 1) === 13 ? text.slice(start, nl - 1) : text.slice(start, nl)
      start = nl + 1
    }
    rest = text.slice(start)
  }
  rest += decoder.decode()
  if (rest !== '') yield rest.endsWith('\r') ? rest.slice(0, -1) : rest
}

const FORMULA_PREFIX = /^'[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/

/** A cell as written before formula escaping (`'+14155550100` → `+14155550100`). */
export function unescapeCsvCell(s: string): string {
  return FORMULA_PREFIX.test(s) ? s.slice(1) : s
}

/**
 * The fields of one CSV record starting with `line`; `more()` gives the next line when a quoted field spans lines.
 * Returns null when the input ends inside quotes.
 */
function splitCsv(line: string, more: () => string | null): string[] | null {
  if (!line.includes('"')) return line.split(',')
  const out: string[] = []
  let field = ''
  let i = 0
  let text = line
  let quoted = false
  for (;;) {
    if (i >= text.length) {
      if (!quoted) {
        out.push(field)
        return out
      }
      const next = more()
      if (next === null) return null
      field += '\n'
      text = next
      i = 0
      continue
    }
    const ch = text[i++] as string
    if (quoted) {
      if (ch === '"') {
        if (text[i] === '"') {
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
}

function countQuotes(s: string): number {
  let n = 0
  for (let i = s.indexOf('"'); i !== -1; i = s.indexOf('"', i + 1)) n++
  return n
}

/** CSV records of a line stream (RFC 4180 quoting, fields may span lines); blank lines skipped. */
async function* csvRecords(lines: AsyncGenerator<string>): AsyncGenerator<string[]> {
  const pending: string[] = []
  let it = await lines.next()
  while (!it.done) {
    const line = it.value
    it = await lines.next()
    if (line === '') continue
    if (!line.includes('"')) {
      yield line.split(',')
      continue
    }
    // A quoted field may span lines: take lines until the quotes balance, then split the record.
    pending.length = 0
    let quotes = countQuotes(line)
    while (quotes % 2 === 1 && !it.done) {
      pending.push(it.value)
      quotes += countQuotes(it.value)
      it = await lines.next()
    }
    let k = 0
    const rec = splitCsv(line, () => (k < pending.length ? (pending[k++] as string) : null))
    if (rec === null) throw new ResultsFileError(`the CSV ends inside a quoted field (the record starting ${JSON.stringify(line.slice(0, 40))})`)
    yield rec
  }
}

/** Bulk rows from a results.csv: the fields a backtest needs (input, action, risk_score, factors, error). */
async function* csvRows(lines: AsyncGenerator<string>): AsyncGenerator<unknown> {
  const records = csvRecords(lines)
  const head = await records.next()
  if (head.done) return
  const header = head.value.map((h) => h.trim())
  const col = (name: string) => header.indexOf(name)
  const [input, action, score, factors, error] = ['input', 'action', 'risk_score', 'factors', 'error'].map(col) as [number, number, number, number, number]
  if (input < 0 || action < 0)
    throw new ResultsFileError(`this CSV is not a riskcheck results.csv (its header has no input and action columns: ${header.slice(0, 8).join(', ')})`)
  if (factors < 0)
    throw new ResultsFileError(
      'this results.csv has no factors column (it was written by a riskcheck before 0.2, which did not keep the factors); export the results again, or use the JSON results',
    )
  for await (const r of records) {
    const err = error >= 0 ? (r[error] ?? '') : ''
    const f = r[factors] ?? ''
    const s = score >= 0 ? (r[score] ?? '') : ''
    yield {
      input: unescapeCsvCell(r[input] ?? ''),
      action: r[action] || null,
      risk_score: s === '' ? null : Number(s),
      factors: f === '' ? [] : f.split(';'),
      error: err === '' ? null : err,
    }
  }
}

/** Items of JSON lines, or of one JSON document spread over several lines (a pretty-printed result or an array). */
async function* jsonItems(lines: AsyncGenerator<string>, options: ReadResultsOptions): AsyncGenerator<unknown> {
  let n = 0
  let first = true
  for await (const line of lines) {
    n++
    if (line.trim() === '') continue
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (e) {
      if (first) {
        // Not JSON lines but one document over several lines: read the rest and parse it whole.
        let text = line
        for await (const l of lines) text += '\n' + l
        try {
          value = JSON.parse(text)
        } catch (e2) {
          options.onBadLine?.(n, (e2 as Error).message)
          yield undefined // counted as not a result
          return
        }
        yield value
        return
      }
      options.onBadLine?.(n, (e as Error).message)
      yield undefined // counted as not a result
      continue
    }
    first = false
    yield value
  }
}

/**
 * The stored answers of a results file, one at a time, for {@link backtest}: JSON lines of lookup results, combined
 * checks or bulk rows (also HTTP envelopes and results pages), one JSON document, or a bulk results.csv (which must
 * have the `factors` column). Throws a {@link ResultsFileError} for a CSV that is not riskcheck's.
 *
 * @example
 * const report = await backtest(readResults('answers.jsonl'), policy)
 */
export async function* readResults(source: TextSource, options: ReadResultsOptions = {}): AsyncGenerator<unknown> {
  const name = typeof source === 'string' ? source : source instanceof URL ? source.pathname : ''
  let format = options.format ?? (/\.csv$/i.test(name) ? 'csv' : /\.(jsonl|ndjson|json)$/i.test(name) ? 'jsonl' : undefined)
  const lines = linesOf(open(source))
  if (format === undefined) {
    // Sniff: JSON starts with { or [; anything else is taken for CSV.
    const first = await lines.next()
    if (first.done) return
    format = /^\s*[{[]/.test(first.value) ? 'jsonl' : 'csv'
    const rest = lines
    const again = (async function* () {
      yield first.value
      yield* rest
    })()
    yield* format === 'csv' ? csvRows(again) : jsonItems(again, options)
    return
  }
  yield* format === 'csv' ? csvRows(lines) : jsonItems(lines, options)
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
