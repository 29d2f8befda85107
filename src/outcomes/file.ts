/**
 * Outcomes files: what happened after answers, kept outside the service — CSV with a header (`input,type,outcome`
 * with optional `note`, `created_at`; or `request_id,outcome`) or JSON lines of the same fields — read into
 * {@link OutcomeEntry}s. Format and meaning: docs/outcomes.md, "Outcomes files".
 */
import { readFile } from 'node:fs/promises'
import { OUTCOME_KINDS, type OutcomeKind } from '../server/store/contracts/outcomes.js'

export type { OutcomeKind } from '../server/store/contracts/outcomes.js'

/** One outcome of a file: about an input (`input` + `type`) or about an answer (`request_id`). */
export interface OutcomeEntry {
  input?: string
  type?: 'email' | 'phone' | 'ip'
  request_id?: string
  outcome: OutcomeKind
  note?: string | null
  /** When it was recorded (ISO 8601), from `created_at`; null or absent when the file does not say. */
  at?: string | null
}

/** A line of an outcomes file that cannot be read; `line` counts from 1 (the CSV header is line 1). */
export class OutcomesFileError extends Error {
  line: number
  constructor(message: string, line: number) {
    super(`line ${line}: ${message}`)
    this.name = 'OutcomesFileError'
    this.line = line
  }
}

const TYPES = ['email', 'phone', 'ip'] as const
const KINDS: ReadonlySet<string> = new Set(OUTCOME_KINDS)
const FIELDS = new Set(['input', 'type', 'request_id', 'outcome', 'note', 'created_at'])

/** CSV records with the line each starts on (RFC 4180: quoted cells may hold commas, quotes and line breaks). */
function csvRecords(text: string): Array<{ line: number; cells: string[] }> {
  const out: Array<{ line: number; cells: string[] }> = []
  let cells: string[] = []
  let cell = ''
  let quoted = false
  let line = 1
  let start = 1
  let any = false
  const end = () => {
    cells.push(cell)
    if (any || cells.length > 1 || cell !== '') out.push({ line: start, cells })
    cells = []
    cell = ''
    any = false
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++
      else if (c === '"') quoted = false
      else {
        if (c === '\n') line++
        cell += c
      }
      continue
    }
    if (c === '"') (quoted = true), (any = true)
    else if (c === ',') cells.push(cell), (cell = ''), (any = true)
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++
      end()
      line++
      start = line
    } else cell += c
  }
  if (quoted) throw new OutcomesFileError('a quoted cell is not closed', start)
  if (cell !== '' || cells.length > 0) end()
  return out
}

/** One entry from its fields, or the error of its line. */
function entryOf(fields: Record<string, unknown>, line: number): OutcomeEntry {
  for (const k of Object.keys(fields)) if (!FIELDS.has(k)) throw new OutcomesFileError(`unknown field ${JSON.stringify(k)} (input, type, request_id, outcome, note, created_at)`, line)
  const str = (k: string): string | undefined => {
    const v = fields[k]
    if (v === undefined || v === null || v === '') return undefined
    if (typeof v !== 'string') throw new OutcomesFileError(`${k} must be a string`, line)
    return v.trim() === '' ? undefined : v.trim()
  }
  const outcome = str('outcome')?.toLowerCase()
  if (outcome === undefined) throw new OutcomesFileError('outcome is missing', line)
  if (!KINDS.has(outcome)) throw new OutcomesFileError(`outcome must be one of ${OUTCOME_KINDS.join(', ')} (got ${JSON.stringify(outcome)})`, line)
  const entry: OutcomeEntry = { outcome: outcome as OutcomeKind }
  const requestId = str('request_id')
  const input = str('input')
  if (requestId !== undefined && input !== undefined) throw new OutcomesFileError('give request_id or input, not both', line)
  if (requestId !== undefined) entry.request_id = requestId
  else if (input !== undefined) {
    const type = str('type')?.toLowerCase()
    if (type === undefined) throw new OutcomesFileError('input needs a type (email, phone or ip)', line)
    if (!(TYPES as readonly string[]).includes(type)) throw new OutcomesFileError(`type must be email, phone or ip (got ${JSON.stringify(type)})`, line)
    entry.input = input
    entry.type = type as OutcomeEntry['type']
  } else throw new OutcomesFileError('neither request_id nor input is given', line)
  const note = fields.note
  if (note !== undefined) entry.note = note === null || note === '' ? null : String(note)
  const at = str('created_at')
  if (at !== undefined) {
    if (Number.isNaN(Date.parse(at))) throw new OutcomesFileError(`created_at is not a date (got ${JSON.stringify(at)})`, line)
    entry.at = at
  } else if (fields.created_at !== undefined) entry.at = null
  return entry
}

/**
 * Reads the outcomes of a file's text. Every entry is checked; the first bad line throws an {@link OutcomesFileError}.
 *
 * @example
 * parseOutcomes('input,type,outcome\njane@example.org,email,chargeback\n', 'csv')
 * // [{ input: 'jane@example.org', type: 'email', outcome: 'chargeback' }]
 */
export function parseOutcomes(text: string, format: 'csv' | 'jsonl'): OutcomeEntry[] {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  const out: OutcomeEntry[] = []
  if (format === 'jsonl') {
    body.split('\n').forEach((raw, i) => {
      const line = raw.trim()
      if (line === '') return
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        throw new OutcomesFileError('not JSON', i + 1)
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new OutcomesFileError('not a JSON object', i + 1)
      out.push(entryOf(value as Record<string, unknown>, i + 1))
    })
    return out
  }
  const records = csvRecords(body)
  const header = records.shift()
  if (!header) return out
  const names = header.cells.map((c) => c.trim().toLowerCase())
  if (!names.includes('outcome')) throw new OutcomesFileError('the header must name the columns (input,type,outcome or request_id,outcome)', header.line)
  for (const r of records) {
    if (r.cells.length === 1 && r.cells[0]!.trim() === '') continue
    if (r.cells.length > names.length) throw new OutcomesFileError(`${r.cells.length} cells for ${names.length} columns`, r.line)
    const fields: Record<string, unknown> = {}
    names.forEach((n, i) => {
      if (r.cells[i] !== undefined) fields[n] = r.cells[i]
    })
    out.push(entryOf(fields, r.line))
  }
  return out
}

/** Reads an outcomes file: `.jsonl` / `.ndjson` / `.json` as JSON lines, anything else as CSV. */
export async function readOutcomesFile(path: string): Promise<OutcomeEntry[]> {
  const text = await readFile(path, 'utf8')
  return parseOutcomes(text, /\.(jsonl|ndjson|json)$/i.test(path) ? 'jsonl' : 'csv')
}
