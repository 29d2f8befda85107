/**
 * Outcome files (docs/outcomes.md "In the library"): CSV with a header row, or JSON Lines (one object a line), each
 * entry an outcome about an input (`input` + `type`) or about a request (`request_id`). A malformed entry is an
 * {@link OutcomesFileError} naming its line; nothing else is thrown for any text.
 */
import { readFile } from 'node:fs/promises'
import { extname } from 'node:path'
import { OUTCOME_INPUT_TYPES, OUTCOME_KINDS, type OutcomeInputType, type OutcomeKind } from '../schema.js'
import { instantOfText } from '../instant.js'
import { outcomeInputKey } from './rules.js'

export { OUTCOME_KINDS, type OutcomeKind }

/** One outcome of a file, or given to `createRiskcheck({ outcomes })`. */
export interface OutcomeEntry {
  /** An email address, a phone number in international form or one IP address; with `type`. */
  input?: string
  type?: 'email' | 'phone' | 'ip'
  /** The `request.id` of an answer (the library keeps no requests: such entries are ignored by it). */
  request_id?: string
  outcome: OutcomeKind
  note?: string | null
  /** When it happened (ISO 8601); orders the entries (later wins). */
  at?: string | null
}

/** A malformed outcome file: `line` is the 1-based line of the entry (0: the file as a whole). */
export class OutcomesFileError extends Error {
  line: number
  constructor(line: number, message: string) {
    super(line > 0 ? `line ${line}: ${message}` : message)
    this.name = 'OutcomesFileError'
    this.line = line
  }
}

const FIELDS = ['input', 'type', 'request_id', 'outcome', 'note', 'at'] as const
type Field = (typeof FIELDS)[number]
/** `created_at` (what GET /v1/outcomes names the time) is read as `at`, so an export of the API reads back. */
const fieldOf = (name: string) => (name === 'created_at' ? 'at' : name)
const KINDS: ReadonlySet<string> = new Set(OUTCOME_KINDS)
const TYPES: ReadonlySet<string> = new Set(OUTCOME_INPUT_TYPES)
const shown = (v: string) => JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)

/**
 * An entry of raw fields (absent: undefined), or the reason it is not one: an outcome of the list; either
 * `request_id`, or `input` with `type` (an input that can be labelled: the lists' normalisation); `at` a date.
 */
export function checkEntry(raw: Partial<Record<Field, string | null>>): OutcomeEntry | string {
  const { input, request_id, note, at } = raw
  // kinds and types are compared as the API writes them (lower case), so a hand-made `FRAUD` or `Email` is read too
  const outcome = raw.outcome?.toLowerCase()
  const type = raw.type?.toLowerCase()
  if (outcome === undefined || outcome === null || outcome === '') return 'outcome is missing'
  if (!KINDS.has(outcome)) return `outcome ${shown(outcome)} is not one of ${OUTCOME_KINDS.join(', ')}`
  const byId = request_id !== undefined && request_id !== null && request_id !== ''
  const byInput = (input !== undefined && input !== null && input !== '') || (type !== undefined && type !== null && type !== '')
  if (byId === byInput) return 'needs either request_id, or input with type'
  const entry: OutcomeEntry = { outcome: outcome as OutcomeKind }
  if (byId) entry.request_id = request_id!
  else {
    if (!input) return 'input is missing (type is given)'
    if (!type) return 'type is missing (input is given)'
    if (!TYPES.has(type)) return `type ${shown(type)} is not one of ${OUTCOME_INPUT_TYPES.join(', ')}`
    const n = outcomeInputKey(type as OutcomeInputType, input)
    if (!n.ok) return `input ${shown(input)} is ${n.reason}`
    entry.input = input
    entry.type = type as OutcomeInputType
  }
  if (note !== undefined) entry.note = note === '' ? null : note
  if (at !== undefined && at !== null && at !== '') {
    // a date-time without an offset would be read in the machine's time zone, and the order of entries with it
    if (instantOfText(at) === null) return `at ${shown(at)} is not an ISO 8601 date or date-time with Z or an offset`
    entry.at = at
  } else if (at !== undefined) entry.at = null
  return entry
}

/**
 * The positions of `entries` in the order they apply, the later one winning: by `at`, an entry without one taking the
 * time of the entry before it (the first ones: the earliest), equal times in the given order. The library's outcomes
 * and a backtest's labels follow it both, so one file never says one thing to a lookup and another to a backtest.
 */
export function applyOrder(entries: readonly OutcomeEntry[]): number[] {
  let t = Number.NEGATIVE_INFINITY
  const times = entries.map((e) => (t = (typeof e.at === 'string' ? instantOfText(e.at) : null) ?? t))
  // equal times: -Infinity - -Infinity is NaN, which also falls through to the given order
  return entries.map((_, i) => i).sort((a, b) => (times[a] as number) - (times[b] as number) || a - b)
}

/** The records of a CSV text (RFC 4180 quoting), each with the line it starts on. */
function csvRecords(text: string): Array<{ line: number; cells: string[] }> {
  const out: Array<{ line: number; cells: string[] }> = []
  let cells: string[] = []
  let cell = ''
  let quoted = false
  let line = 1
  let start = 1
  let i = 0
  const end = () => {
    cells.push(cell)
    if (!(cells.length === 1 && cells[0]!.trim() === '')) out.push({ line: start, cells })
    cells = []
    cell = ''
  }
  while (i < text.length) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), (i += 2)
      else if (c === '"') (quoted = false), i++
      else {
        if (c === '\n') line++
        cell += c
        i++
      }
      continue
    }
    if (c === '"' && cell === '') (quoted = true), i++
    else if (c === ',') cells.push(cell), (cell = ''), i++
    else if (c === '\n' || c === '\r') {
      end()
      i += c === '\r' && text[i + 1] === '\n' ? 2 : 1
      line++
      start = line
    } else (cell += c), i++
  }
  if (quoted) throw new OutcomesFileError(start, 'a quoted field is not closed')
  if (cell !== '' || cells.length > 0) end()
  return out
}

function parseCsv(text: string): OutcomeEntry[] {
  const records = csvRecords(text)
  const head = records.shift()
  if (!head) return []
  const columns = head.cells.map((c) => fieldOf(c.trim().toLowerCase()))
  columns.forEach((c, i) => {
    if (!(FIELDS as readonly string[]).includes(c)) throw new OutcomesFileError(head.line, `unknown column ${shown(c)} (columns: ${FIELDS.join(', ')})`)
    if (columns.indexOf(c) !== i) throw new OutcomesFileError(head.line, `column ${shown(c)} is given twice`)
  })
  if (!columns.includes('outcome')) throw new OutcomesFileError(head.line, 'the header has no outcome column')
  return records.map(({ line, cells }) => {
    if (cells.length > columns.length) throw new OutcomesFileError(line, `${cells.length} fields, the header names ${columns.length}`)
    const raw: Partial<Record<Field, string>> = {}
    columns.forEach((c, i) => (raw[c as Field] = (cells[i] ?? '').trim()))
    const e = checkEntry(raw)
    if (typeof e === 'string') throw new OutcomesFileError(line, e)
    return e
  })
}

function parseJsonl(text: string): OutcomeEntry[] {
  const out: OutcomeEntry[] = []
  text.split('\n').forEach((l, i) => {
    const s = l.trim()
    if (s === '') return
    let v: unknown
    try {
      v = JSON.parse(s)
    } catch (e) {
      throw new OutcomesFileError(i + 1, `not JSON (${(e as Error).message})`)
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new OutcomesFileError(i + 1, 'not a JSON object')
    const raw: Partial<Record<Field, string | null>> = {}
    for (const [name, val] of Object.entries(v as Record<string, unknown>)) {
      const k = fieldOf(name)
      if (raw[k as Field] !== undefined) throw new OutcomesFileError(i + 1, `${k} is given twice`)
      if (!(FIELDS as readonly string[]).includes(k)) throw new OutcomesFileError(i + 1, `unknown field ${shown(k)} (fields: ${FIELDS.join(', ')})`)
      const nullable = k === 'note' || k === 'at'
      if (typeof val !== 'string' && !(nullable && val === null)) throw new OutcomesFileError(i + 1, `${k} must be a string${nullable ? ' or null' : ''}`)
      raw[k as Field] = val as string | null
    }
    const e = checkEntry(raw)
    if (typeof e === 'string') throw new OutcomesFileError(i + 1, e)
    out.push(e)
  })
  return out
}

/**
 * The entries of an outcome file's text. CSV: a header naming some of `input, type, request_id, outcome, note, at`
 * (`created_at` is read as `at`; `outcome` required), then one entry a row. JSONL: one object a line with those fields. Blank lines are skipped.
 * Throws {@link OutcomesFileError} (with the line) for a malformed entry, and for nothing else.
 */
export function parseOutcomes(text: string, format: 'csv' | 'jsonl'): OutcomeEntry[] {
  if (format !== 'csv' && format !== 'jsonl') throw new OutcomesFileError(0, `unknown format ${String(format)} (csv or jsonl)`)
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  return format === 'csv' ? parseCsv(body) : parseJsonl(body)
}

/** The entries of an outcome file; its format from the extension (`.csv`, `.jsonl` or `.ndjson`). */
export async function readOutcomesFile(path: string): Promise<OutcomeEntry[]> {
  const ext = extname(path).toLowerCase()
  const format = ext === '.csv' ? 'csv' : ext === '.jsonl' || ext === '.ndjson' ? 'jsonl' : null
  if (!format) throw new OutcomesFileError(0, `${path}: an outcome file is .csv, .jsonl or .ndjson`)
  return parseOutcomes(await readFile(path, 'utf8'), format)
}
