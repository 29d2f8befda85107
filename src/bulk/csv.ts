/**
 * CSV of bulk results (RFC 4180, a page of rows at a time) and a small CSV reader for the CLI's input files. The
 * columns are {@link CSV_BASE_CELLS} then the type's details flattened to dotted names (docs/api.md "results.csv
 * columns" is generated from them); formula-like text is escaped with `'` ({@link isFormulaText}). Why:
 * docs/decisions.md, "HTTP API" → "results.csv columns".
 */
import { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import { BULK_DETAILS_SCHEMAS, type BulkType } from '../schema.js'
import type { BulkRowRecord } from './types.js'

/**
 * The leading columns of results.csv, each with what it holds and how its cell is taken from a row: the header,
 * every record and the column list of docs/api.md (scripts/docs.ts) all come from this one list.
 */
export const CSV_BASE_CELLS: ReadonlyArray<{ name: string; holds: string; cell: (row: BulkRowRecord) => unknown }> = [
  { name: 'input', holds: 'the input, once per unique input, in input order', cell: (r) => r.input },
  { name: 'action', holds: 'the recommended action: `approve`, `verify`, `review` or `block` (empty for an error row)', cell: (r) => r.action },
  { name: 'status', holds: 'the verdict status (empty for an error row)', cell: (r) => r.status },
  { name: 'reason', holds: 'the verdict reason code (empty for an error row)', cell: (r) => r.reason },
  { name: 'risk_score', holds: 'the risk score, 0–100 (empty for an error row)', cell: (r) => r.risk_score },
  { name: 'credits_used', holds: 'credits the row cost', cell: (r) => r.credits_used },
  { name: 'cache_hit', holds: '`true` when the answer came from the result cache', cell: (r) => r.cache_hit },
  { name: 'error', holds: 'why a row could not be checked (`CODE: message`), else empty', cell: (r) => r.error },
  { name: 'factors', holds: 'the fired factor codes joined with `;` (what `riskcheck policy test` re-scores; empty for an error row)', cell: (r) => cell(r.factors) },
]

/** The names of the leading columns of results.csv ({@link CSV_BASE_CELLS}). */
export const CSV_BASE_COLUMNS: readonly string[] = CSV_BASE_CELLS.map((c) => c.name)

interface SchemaNode {
  properties?: Record<string, SchemaNode>
  anyOf?: SchemaNode[]
}

function flattenSchema(node: SchemaNode, prefix: string, out: string[][]): void {
  const obj = node.properties ? node : node.anyOf?.find((s) => s.properties)
  if (!obj?.properties) {
    out.push(prefix.split('.'))
    return
  }
  for (const [k, child] of Object.entries(obj.properties)) flattenSchema(child, prefix ? `${prefix}.${k}` : k, out)
}

const pathCache = new Map<BulkType, string[][]>()

/** Paths of the details columns of `type`, each as its keys (`[['location', 'country_code'], …]`). */
export function detailsPaths(type: BulkType): string[][] {
  let paths = pathCache.get(type)
  if (!paths) {
    paths = []
    flattenSchema(BULK_DETAILS_SCHEMAS[type] as unknown as SchemaNode, '', paths)
    pathCache.set(type, paths)
  }
  return paths
}

/** All column names of results.csv for `type`. */
export function csvColumns(type: BulkType): string[] {
  return [...CSV_BASE_COLUMNS, ...detailsPaths(type).map((p) => p.join('.'))]
}

function cell(v: unknown): unknown {
  if (v === null || v === undefined) return null
  if (Array.isArray(v)) return v.map((x) => (x !== null && typeof x === 'object' ? JSON.stringify(x) : String(x))).join(';')
  if (typeof v === 'object') return JSON.stringify(v)
  return v
}

/** One CSV record (cells in {@link csvColumns} order) of a row. */
export function csvRecord(type: BulkType, row: BulkRowRecord): unknown[] {
  const rec: unknown[] = CSV_BASE_CELLS.map((c) => c.cell(row))
  for (const path of detailsPaths(type)) {
    let v: unknown = row.details
    for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined
    rec.push(cell(v))
  }
  return rec
}

/** A plain number (`-12.5`, `+3`, `-1e-7`): a spreadsheet reads it as that number. */
const PLAIN_NUMBER = /^[+-]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?$/
/** Only a phone number: `+` and digits, in groups split by one space, dot or hyphen (`+12015551000`, `+1 201-555-1000`). */
const PLAIN_PHONE = /^\+\d+(?:[ .-]\d+)*$/

/**
 * True when a spreadsheet would read the text as a formula, so {@link csvField} neutralises it with a leading `'`:
 * it starts with `=`, `+`, `-`, `@`, tab or CR (or a full-width `＝＋－＠`) and is not only a number (`-12.5`) or a
 * phone number (`+` and digit groups split by single spaces, dots or hyphens). A value left alone therefore holds
 * nothing but digits, signs, `.`, `e`, spaces and hyphens: at worst a spreadsheet shows it as a number — it cannot
 * call a function, reference a cell or start another program.
 *
 * @example isFormulaText('=HYPERLINK("x")') // true — isFormulaText('-2+3') // true — isFormulaText('+12015551000') // false
 */
export function isFormulaText(s: string): boolean {
  switch (s.charCodeAt(0)) {
    case 0x3d: // =
    case 0x40: // @
    case 0x09: // tab
    case 0x0d: // CR
    case 0xff1d: // full-width =
    case 0xff0b: // full-width +
    case 0xff0d: // full-width -
    case 0xff20: // full-width @
      return true
    case 0x2b: // +
      return !PLAIN_PHONE.test(s) && !PLAIN_NUMBER.test(s)
    case 0x2d: // -
      return !PLAIN_NUMBER.test(s)
    default:
      return false
  }
}

/**
 * One CSV field: null/undefined and '' are empty, booleans `true`/`false`, numbers as JavaScript prints them; text a
 * spreadsheet would run as a formula ({@link isFormulaText}) gets a leading `'` (CSV-injection defence; numbers and
 * phone numbers such as `+14155550100` are left alone); a field with a comma, a semicolon (many locales' separator),
 * a quote or a line break is quoted, its quotes doubled (RFC 4180). The same output as csv-stringify (`escape_formulas`
 * for the cells {@link isFormulaText} names, `quoted_match: ';'`; a test checks that) at a fraction of its cost.
 *
 * @example csvField('=1+1') // "'=1+1" — csvField('+14155550100') // '+14155550100' — csvField('say "hi", ok') // '"say ""hi"", ok"'
 */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  if (typeof value === 'number' || typeof value === 'bigint') return String(value)
  let s = String(value)
  if (s === '') return ''
  if (isFormulaText(s)) s = `'${s}`
  let quote = false
  let quotes = false
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x22) quotes = true
    else if (c === 0x2c || c === 0x0a || c === 0x0d || c === 0x3b) quote = true
  }
  if (quotes) return `"${s.replaceAll('"', '""')}"`
  return quote ? `"${s}"` : s
}

/** One CSV line (with its line feed) of fields. */
export function csvLine(fields: readonly unknown[]): string {
  let line = ''
  for (let i = 0; i < fields.length; i++) line += i === 0 ? csvField(fields[i]) : `,${csvField(fields[i])}`
  return `${line}\n`
}

/**
 * Streams rows as CSV text (header first), a page of rows at a time with backpressure: the next page is read from
 * `pages` only when the consumer has taken the previous one. An error of `pages` destroys the returned stream;
 * destroying the stream stops reading pages.
 *
 * @example
 * createResultsCsv('ip', pagesOf(jobId)).pipe(fs.createWriteStream('results.csv'))
 */
export function createResultsCsv(type: BulkType, pages: AsyncIterable<readonly BulkRowRecord[]>): Readable {
  async function* text(): AsyncGenerator<string> {
    yield csvLine(csvColumns(type))
    for await (const page of pages) {
      let chunk = ''
      for (let i = 0; i < page.length; i++) chunk += csvLine(csvRecord(type, page[i] as BulkRowRecord))
      if (chunk !== '') yield chunk
    }
  }
  return Readable.from(text(), { objectMode: false })
}

/** The most characters a CSV field keeps when read ({@link readCsvRecords}, {@link csvRecordsOfText}). */
export const MAX_CSV_FIELD = 65_536

/** Where a field is: its record (1 for the first, a header too) and the line it starts on (1 for the first). */
export interface CsvPosition {
  record: number
  line: number
}

/**
 * The state of a CSV read (RFC 4180: quoted fields with `""`, commas and line breaks inside quotes, CRLF or LF, a
 * leading BOM, empty lines skipped), fed text piece by piece: what {@link readCsvRecords} and {@link csvRecordsOfText}
 * share. Each field is capped at `maxField` characters: a cut field is reported once to `onTruncated`, with what was
 * kept of it and where it starts.
 */
class CsvReader {
  private record: string[] = []
  private field = ''
  private inQuotes = false
  private quotePending = false // saw `"` inside quotes: either the closing quote or the first half of `""`
  private first = true
  private sawAny = false // the current record has content (a field or a separator)
  private records = 0 // records completed
  private line = 1 // the line being read
  private afterCr = false // the last character read was a CR (a LF right after it ends no other line)
  private fieldLine = 1 // the line the current field starts on
  private cut = false // the current field was cut (and reported)
  constructor(
    private readonly maxField: number,
    private readonly onTruncated?: (kept: string, at: CsvPosition) => void,
  ) {}

  private push(ch: string): void {
    if (this.field === '' && !this.inQuotes) this.fieldLine = this.line
    if (this.field.length < this.maxField) this.field += ch
    else if (!this.cut) {
      this.cut = true
      this.onTruncated?.(this.field, { record: this.records + 1, line: this.fieldLine })
    }
  }

  private endField(): void {
    this.record.push(this.field)
    this.field = ''
    this.cut = false
  }

  private endRecord(out: string[][]): void {
    this.endField()
    out.push(this.record)
    this.records++
  }

  /** Reads `chunk`, adding to `out` each record it completes. */
  feed(chunk: string, out: string[][]): void {
    let text = chunk
    if (this.first && text !== '') {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
      this.first = false
    }
    for (let i = 0; i < text.length; i++) {
      const ch = text[i] as string
      if (ch === '\r' || (ch === '\n' && !this.afterCr)) this.line++
      this.afterCr = ch === '\r'
      if (this.inQuotes) {
        if (this.quotePending) {
          this.quotePending = false
          if (ch === '"') {
            this.push('"')
            continue
          }
          this.inQuotes = false // the quote closed the field; fall through to handle ch unquoted
        } else if (ch === '"') {
          this.quotePending = true
          continue
        } else {
          this.push(ch)
          continue
        }
      }
      if (ch === '"' && this.field === '') {
        this.inQuotes = true
        this.fieldLine = this.line
        this.sawAny = true
      } else if (ch === ',') {
        this.endField()
        this.sawAny = true
      } else if (ch === '\n' || ch === '\r') {
        if (ch === '\r' && text[i + 1] === '\n') {
          i++
          this.afterCr = false
        }
        if (this.sawAny || this.field !== '') this.endRecord(out)
        this.record = []
        this.sawAny = false
      } else {
        this.push(ch)
        this.sawAny = true
      }
    }
  }

  /**
   * Ends the input, adding the last record to `out`. Returns the text of a quoted field left open (an opening quote
   * never closed, so the field ran to the end of the input), else null.
   */
  end(out: string[][]): string | null {
    if (this.quotePending) this.inQuotes = false
    const open = this.inQuotes ? this.field : null
    if (this.sawAny || this.field !== '' || this.inQuotes) this.endRecord(out)
    return open
  }
}

/**
 * Reads CSV records ({@link CsvReader}'s rules) from text chunks, or from bytes decoded as UTF-8 (a character split
 * between two chunks is read whole). A record is yielded as its fields. A field is capped at `maxField` characters
 * (default {@link MAX_CSV_FIELD}), so a stray quote cannot fill memory; each cut field is reported once by
 * `onTruncated` (kept text, position) before its record is yielded: a caller refusing cut fields throws there. A
 * quote never closed is reported by `onUnclosed` with that field's text, before the last record is yielded.
 *
 * @example
 * for await (const fields of readCsvRecords(fs.createReadStream('in.csv'))) …
 */
export async function* readCsvRecords(
  chunks: AsyncIterable<string | Buffer>,
  options: { maxField?: number; onTruncated?: (kept: string, at: CsvPosition) => void; onUnclosed?: (field: string) => void } = {},
): AsyncGenerator<string[]> {
  const reader = new CsvReader(options.maxField ?? MAX_CSV_FIELD, options.onTruncated)
  const decoder = new StringDecoder('utf8')
  for await (const chunk of chunks) {
    const out: string[][] = []
    reader.feed(typeof chunk === 'string' ? chunk : decoder.write(chunk), out)
    yield* out
  }
  const out: string[][] = []
  reader.feed(decoder.end(), out)
  const unclosed = reader.end(out)
  if (unclosed !== null) options.onUnclosed?.(unclosed)
  yield* out
}

/** How a refusal names a field (a quoted one left open, one cut): its first line, at most 40 characters. */
export const fieldStart = (field: string): string => field.split(/\r?\n/, 1)[0]!.slice(0, 40)

/**
 * The CSV records of `text` ({@link CsvReader}'s rules), the text of a quoted field left open (null when every quote
 * closed) and the first field cut at `maxField` characters, with where it starts (null when none was): pasted text,
 * where a quote opened by mistake would otherwise make the rest of it, or many of its lines, one field.
 *
 * @example csvRecordsOfText('email,note\na@x.com,"two\nlines"') // { records: [['email', 'note'], ['a@x.com', 'two\nlines']], unclosed: null, cut: null }
 */
export function csvRecordsOfText(
  text: string,
  maxField = MAX_CSV_FIELD,
): { records: string[][]; unclosed: string | null; cut: (CsvPosition & { kept: string }) | null } {
  let cut: (CsvPosition & { kept: string }) | null = null
  const reader = new CsvReader(maxField, (kept, at) => (cut ??= { kept, ...at }))
  const records: string[][] = []
  reader.feed(text, records)
  const unclosed = reader.end(records)
  return { records, unclosed, cut }
}
