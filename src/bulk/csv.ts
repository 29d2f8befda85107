/**
 * CSV of bulk results (written with csv-stringify, streaming) and a small CSV reader for the CLI's input files.
 *
 * Columns (README "Bulk jobs"): input, action, status, reason, risk_score, credits_used, cache_hit, error, factors
 * (the fired factor codes joined with `;`, what `riskcheck policy test` re-scores), then the type's details flattened
 * to dotted names in schema order (`location.country_code`, `flags.is_vpn`, …). Arrays are joined
 * with `;`, booleans are `true`/`false`, null is an empty cell. Formula escaping is on: a cell starting with `=`, `+`,
 * `-`, `@`, tab or CR (and their full-width forms) is prefixed with `'` so a spreadsheet shows it as text — this also
 * applies to E.164 numbers (`'+14155550100`); numbers themselves (negative latitudes) are left alone.
 */
import type { Readable } from 'node:stream'
import { stringify } from 'csv-stringify'
import { DETAILS_SCHEMAS, type BulkType } from '../schema.js'
import type { BulkRowRecord } from './types.js'

/** The fixed leading columns of results.csv. */
export const CSV_BASE_COLUMNS = ['input', 'action', 'status', 'reason', 'risk_score', 'credits_used', 'cache_hit', 'error', 'factors'] as const

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
    flattenSchema(DETAILS_SCHEMAS[type] as unknown as SchemaNode, '', paths)
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
  const rec: unknown[] = [row.input, row.action, row.status, row.reason, row.risk_score, row.credits_used, row.cache_hit, row.error, cell(row.factors)]
  for (const path of detailsPaths(type)) {
    let v: unknown = row.details
    for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined
    rec.push(cell(v))
  }
  return rec
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
  const stringifier = stringify({
    header: true,
    columns: csvColumns(type),
    escape_formulas: true,
    cast: { boolean: (v: boolean) => (v ? 'true' : 'false') },
  })
  const drained = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        stringifier.off('drain', done)
        stringifier.off('close', done)
        resolve()
      }
      stringifier.on('drain', done)
      stringifier.on('close', done)
    })
  void (async () => {
    try {
      for await (const page of pages) {
        for (const row of page) {
          if (stringifier.destroyed) return
          if (!stringifier.write(csvRecord(type, row))) await drained()
        }
      }
      if (!stringifier.destroyed) stringifier.end()
    } catch (e) {
      stringifier.destroy(e instanceof Error ? e : new Error(String(e)))
    }
  })()
  return stringifier
}

/**
 * Reads CSV records (RFC 4180: quoted fields with `""`, commas and line breaks inside quotes, CRLF or LF, a leading
 * BOM) from text chunks. A record is yielded as its fields; empty lines are skipped. Each field is capped at
 * `maxField` characters (longer fields are cut), so a stray quote cannot make one field swallow the whole file's
 * memory unnoticed — the cut is reported by `onTruncated`.
 *
 * @example
 * for await (const fields of readCsvRecords(fs.createReadStream('in.csv', 'utf8'))) …
 */
export async function* readCsvRecords(
  chunks: AsyncIterable<string | Buffer>,
  options: { maxField?: number; onTruncated?: () => void } = {},
): AsyncGenerator<string[]> {
  const maxField = options.maxField ?? 65_536
  let record: string[] = []
  let field = ''
  let inQuotes = false
  let quotePending = false // saw `"` inside quotes: either the closing quote or the first half of `""`
  let first = true
  let sawAny = false // the current record has content (a field or a separator)
  const push = (ch: string) => {
    if (field.length < maxField) field += ch
    else options.onTruncated?.()
  }
  const endField = () => {
    record.push(field)
    field = ''
  }
  for await (const chunk of chunks) {
    let text = typeof chunk === 'string' ? chunk : chunk.toString('utf8')
    if (first) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
      first = false
    }
    for (let i = 0; i < text.length; i++) {
      const ch = text[i] as string
      if (inQuotes) {
        if (quotePending) {
          quotePending = false
          if (ch === '"') {
            push('"')
            continue
          }
          inQuotes = false // the quote closed the field; fall through to handle ch unquoted
        } else if (ch === '"') {
          quotePending = true
          continue
        } else {
          push(ch)
          continue
        }
      }
      if (ch === '"' && field === '') {
        inQuotes = true
        sawAny = true
      } else if (ch === ',') {
        endField()
        sawAny = true
      } else if (ch === '\n' || ch === '\r') {
        if (ch === '\r' && text[i + 1] === '\n') i++
        if (sawAny || field !== '') {
          endField()
          yield record
        }
        record = []
        sawAny = false
      } else {
        push(ch)
        sawAny = true
      }
    }
  }
  if (quotePending) inQuotes = false
  if (sawAny || field !== '' || inQuotes) {
    endField()
    yield record
  }
}
