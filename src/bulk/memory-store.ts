/**
 * The default bulk store: jobs and rows in memory.
 *
 * Rows live outside the JavaScript heap: each row is serialized once (JSON, details packed by ./codec.ts, repeated
 * reason sentences replaced by a number) into large byte slabs, and only three typed arrays per job (slab position,
 * state, action) index them. 100,000 rows cost about 40 MB of plain bytes and no garbage-collected objects, so the
 * heap — and with it the process's peak memory — stays flat while a job runs; pages are decoded on demand.
 */
import { ACTIONS, type Action, type BulkJob } from '../schema.js'
import { detailsCodec, type DetailsCodec } from './codec.js'
import { pendingRow } from './fold.js'
import type { BulkJobRecord, BulkRowQuery, BulkRowRecord, BulkRowState, BulkStore } from './types.js'

/** Slab size: rows are appended to slabs of this many bytes (a larger row gets a slab of its own). */
const SLAB_BYTES = 256 * 1024
/** Most distinct reason sentences shared by number; beyond that, new ones are stored as text. */
const MAX_REASONS = 20_000

const STATE_CODE: Record<BulkRowState, number> = { pending: 0, done: 1, error: 2 }
const STATES: readonly BulkRowState[] = ['pending', 'done', 'error']
const RETRYABLE = 4
const ACTION_CODE = new Map<Action, number>(ACTIONS.map((a, i) => [a, i + 1]))

/** A row as serialized: [input, status, reason (text or number), risk_score, credits_used, cache_hit, error, details, factors]. */
type Serialized = [
  string,
  string | null,
  string | number | null,
  number | null,
  number,
  0 | 1,
  string | null,
  unknown[] | Record<string, unknown> | 0,
  string[] | null,
]

interface MemoryJob {
  record: BulkJobRecord
  codec: DetailsCodec
  count: number
  /** state code | RETRYABLE flag, per row */
  flags: Uint8Array
  /** 0 none, else ACTIONS index + 1, per row */
  actions: Uint8Array
  /** per row: slab index, byte offset, byte length */
  loc: Uint32Array
  slabs: Buffer[]
  pos: number
}

const copyJob = (job: BulkJob): BulkJob => ({ ...job, results: { ...job.results } })
const copyRecord = (r: BulkJobRecord): BulkJobRecord => ({ ...r, job: copyJob(r.job), options: { ...r.options } })

/** The reason sentences shared by number across a store's jobs (at most {@link MAX_REASONS}; others stay text). */
function reasonTable() {
  const reasons: string[] = []
  const ids = new Map<string, number>()
  return {
    ref(s: string | null): string | number | null {
      if (s === null) return null
      let id = ids.get(s)
      if (id === undefined && reasons.length < MAX_REASONS) {
        id = reasons.length
        reasons.push(s)
        ids.set(s, id)
      }
      return id ?? s
    },
    text: (r: string | number | null): string | null => (typeof r === 'number' ? (reasons[r] as string) : r),
  }
}

type Reasons = ReturnType<typeof reasonTable>

/** A row's text in a slab: a pending row is only its input (plain text, no JSON), a finished one {@link Serialized}. */
function rowText(j: MemoryJob, row: BulkRowRecord, reasons: Reasons): string {
  if (row.state === 'pending') return row.input
  let details: Serialized[7] = 0
  for (const _ in row.details) {
    details = j.codec.pack(row.details)
    break
  }
  const s: Serialized = [row.input, row.status, reasons.ref(row.reason), row.risk_score, row.credits_used, row.cache_hit ? 1 : 0, row.error, details, row.factors]
  return JSON.stringify(s)
}

/** Appends a row's text to the job's last slab (a new slab when it does not fit) and indexes it. */
function writeRow(j: MemoryJob, row: BulkRowRecord, reasons: Reasons): void {
  const text = rowText(j, row, reasons)
  const len = Buffer.byteLength(text)
  let slab = j.slabs[j.slabs.length - 1]
  if (!slab || j.pos + len > slab.length) {
    slab = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, len))
    j.slabs.push(slab)
    j.pos = 0
  }
  slab.write(text, j.pos, 'utf8')
  const i = row.index * 3
  j.loc[i] = j.slabs.length - 1
  j.loc[i + 1] = j.pos
  j.loc[i + 2] = len
  j.pos += len
  j.flags[row.index] = STATE_CODE[row.state] | (row.retryable ? RETRYABLE : 0)
  j.actions[row.index] = row.action === null ? 0 : (ACTION_CODE.get(row.action) ?? 0)
}

/** Decodes row `index` of a job. */
function readRow(j: MemoryJob, index: number, reasons: Reasons): BulkRowRecord {
  const i = index * 3
  const slab = j.slabs[j.loc[i] as number] as Buffer
  const off = j.loc[i + 1] as number
  const text = slab.toString('utf8', off, off + (j.loc[i + 2] as number))
  const flags = j.flags[index] as number
  if ((flags & 3) === STATE_CODE.pending) return pendingRow(index, text)
  const s = JSON.parse(text) as Serialized
  const action = j.actions[index] as number
  return {
    index,
    input: s[0],
    state: STATES[flags & 3] as BulkRowState,
    retryable: (flags & RETRYABLE) !== 0,
    action: action === 0 ? null : (ACTIONS[action - 1] as Action),
    status: s[1],
    reason: reasons.text(s[2]),
    risk_score: s[3],
    credits_used: s[4],
    cache_hit: s[5] === 1,
    error: s[6],
    factors: s[8],
    details: s[7] === 0 ? {} : j.codec.unpack(s[7]),
  }
}

const isPending = (j: MemoryJob, i: number) => ((j.flags[i] as number) & 3) === STATE_CODE.pending

/** A new job's arrays, sized for its unique inputs, with its rows written. */
function newMemoryJob(stored: BulkJobRecord, rows: Iterable<BulkRowRecord>, reasons: Reasons): MemoryJob {
  const count = stored.job.unique_inputs
  const j: MemoryJob = {
    record: stored,
    codec: detailsCodec(stored.job.type),
    count,
    flags: new Uint8Array(count),
    actions: new Uint8Array(count),
    loc: new Uint32Array(count * 3),
    slabs: [],
    pos: 0,
  }
  for (const row of rows) {
    if (row.index < 0 || row.index >= count) throw new Error(`bulk store: row ${row.index} out of range`)
    writeRow(j, row, reasons)
  }
  return j
}

/** The finished rows of a page: from `fromIndex` up to `toIndex`, of one action when asked, at most `limit`. */
function listJobRows(j: MemoryJob, q: BulkRowQuery, reasons: Reasons): BulkRowRecord[] {
  const end = q.toIndex === null ? j.count : Math.min(q.toIndex, j.count)
  const want = q.action === null ? 0 : (ACTION_CODE.get(q.action) ?? -1)
  const out: BulkRowRecord[] = []
  for (let i = Math.max(0, q.fromIndex); i < end && out.length < q.limit; i++) {
    if (((j.flags[i] as number) & 3) === 0) continue
    if (want !== 0 && j.actions[i] !== want) continue
    out.push(readRow(j, i, reasons))
  }
  return out
}

/**
 * Creates an in-memory bulk store (not persistent: jobs are gone with the process).
 *
 * @example
 * const engine = createBulkEngine(rc.env, { store: createMemoryBulkStore() })
 */
export function createMemoryBulkStore(): BulkStore & { readonly size: number; readonly bytes: number } {
  const jobs = new Map<string, MemoryJob>()
  let seq = 0
  const reasons = reasonTable()
  const must = (id: string): MemoryJob => {
    const j = jobs.get(id)
    if (!j) throw new Error(`bulk store: no job ${id}`)
    return j
  }
  const records = (keep: (r: BulkJobRecord) => boolean) => [...jobs.values()].map((j) => j.record).filter(keep)

  return {
    persistent: false,
    get size() {
      return jobs.size
    },
    /** Bytes of row data held. */
    get bytes() {
      let n = 0
      for (const j of jobs.values()) for (const s of j.slabs) n += s.length
      return n
    },
    insertJob(record, rows) {
      const stored: BulkJobRecord = { ...copyRecord({ ...record, seq: 0 }), seq: ++seq }
      jobs.set(record.job.id, newMemoryJob(stored, rows, reasons))
      return copyRecord(stored)
    },
    getJob(id) {
      const j = jobs.get(id)
      return j ? copyRecord(j.record) : undefined
    },
    listJobs: ({ beforeSeq, limit }) =>
      records((r) => beforeSeq === null || r.seq < beforeSeq)
        .sort((a, b) => b.seq - a.seq)
        .slice(0, limit)
        .map(copyRecord),
    listUnfinishedJobs: () =>
      records((r) => r.job.status === 'queued' || r.job.status === 'running')
        .sort((a, b) => a.seq - b.seq)
        .map(copyRecord),
    updateJob(id, job) {
      must(id).record.job = copyJob(job)
    },
    commitRows(id, rows, job) {
      const j = must(id)
      for (const row of rows) writeRow(j, row, reasons)
      j.record.job = copyJob(job)
    },
    pendingRows(id) {
      const j = must(id)
      const out: Array<{ index: number; input: string }> = []
      for (let i = 0; i < j.count; i++) if (isPending(j, i)) out.push({ index: i, input: readRow(j, i, reasons).input })
      return out
    },
    firstPendingIndex(id) {
      const j = must(id)
      for (let i = 0; i < j.count; i++) if (isPending(j, i)) return i
      return null
    },
    listRows: (id, q: BulkRowQuery) => listJobRows(must(id), q, reasons),
    listRetryableInputs(id) {
      const j = must(id)
      const out: string[] = []
      for (let i = 0; i < j.count; i++) if (((j.flags[i] as number) & RETRYABLE) !== 0) out.push(readRow(j, i, reasons).input)
      return out
    },
    deleteExpired(nowMs) {
      const gone: string[] = []
      for (const [id, j] of jobs) {
        if (Date.parse(j.record.job.expires_at) <= nowMs) {
          jobs.delete(id)
          gone.push(id)
        }
      }
      return gone
    },
    close() {
      jobs.clear()
    },
  }
}
