/**
 * Outcomes in the server (docs/outcomes.md): recording labels (POST /v1/outcomes), listing them, keeping the input
 * hashes of answered requests, and the per-request hook that adds `email_bounced_before` / `reported_fraud_before`
 * to later answers of the same org and key mode. Why it is built this way: docs/decisions.md "Outcomes".
 */
import { LRUCache } from 'lru-cache'
import { createHmac, randomBytes } from 'node:crypto'
import { RiskcheckError } from '../errors.js'
import type { AnswerLabels } from '../lookup.js'
import { answerValues, axisOf, foldLabels, labelFactors, outcomeInputKey, type LabelSets } from '../outcomes/rules.js'
import { OUTCOME_INPUT_TYPES, type OutcomeInputType } from '../schema.js'
import { encodePageCursor, seqOfPageCursor, type PageScope } from './page-cursor.js'
import type { AnswerInputsRecord, InputHashes, NewOutcome, OutcomeKind, OutcomeMode, OutcomeRecord, OutcomeStore } from './store/contracts/outcomes.js'

export { OUTCOME_INPUT_TYPES, outcomeInputKey, type OutcomeInputType }

/** Default retention of outcomes and of the input hashes of answered requests, in days. */
export const DEFAULT_OUTCOME_RETENTION_DAYS = 180
/** Most outcomes in one POST /v1/outcomes. */
export const MAX_OUTCOMES_PER_CALL = 1000
/** Owners whose labels are kept in memory (least recently loaded dropped first). */
const MAX_OWNERS = 500

/** One item of POST /v1/outcomes (validated by the route's schema). */
export interface OutcomeItem {
  request_id?: string
  input?: string
  type?: OutcomeInputType
  outcome: OutcomeKind
  note?: string | null
}

/** The result of one item. */
export interface OutcomeItemResult {
  index: number
  id: string | null
  status: 'recorded' | 'unchanged' | 'not_found' | 'invalid_input'
  error: { code: 'NOT_FOUND' | 'INVALID_INPUT'; message: string } | null
}

/** Who records or reads: an org in one key mode. */
export interface OutcomeOwner {
  orgId: string
  mode: OutcomeMode
}

/** The labels of one org and mode at one outcome version, as the answer hook reads them. */
interface Labels {
  version: number
  sets: LabelSets
}

/** A request's labels hook and the input hashes it collected from the answers it saw. */
export interface RequestLabels {
  hook: AnswerLabels
  /** Null when they cannot be kept (no outcome storage, or its key could not be read). */
  inputs: InputHashes | null
}

/** The server's outcomes. */
export interface OutcomeService {
  /**
   * Before a lookup: the hook that adds the org's labels (and collects the request's input hashes). `known` is the
   * outcome version the auth read returned (null: the org has no outcomes; undefined: ask the store); the labels
   * are read again only when it is newer than the ones this instance holds.
   */
  prepare(owner: OutcomeOwner, known?: number | null): Promise<RequestLabels>
  /**
   * Keeps a request's input hashes: call it in the turn the request is answered, before its settlement — the store
   * writes them with the turn's settlements (never throws; a failure is logged).
   */
  keepInputs(owner: OutcomeOwner, requestId: string, inputs: InputHashes | null): void
  /**
   * Takes back the input hashes {@link keepInputs} kept for a request whose settlement was refused (its answer was
   * never given): deleted once their write has ended (never throws; a failure is logged).
   */
  forgetInputs(owner: OutcomeOwner, requestId: string): void
  record(owner: OutcomeOwner, items: readonly OutcomeItem[]): Promise<OutcomeItemResult[]>
  list(owner: OutcomeOwner, query: { requestId?: string; outcome?: OutcomeKind; cursor?: string; limit: number }): Promise<{ data: OutcomeRecord[]; next_cursor: string | null }>
  /** Label reads made (each one read an org's current labels from the store). */
  readonly loads: number
  flush(): Promise<void>
  /** Deletes outcomes and input hashes older than the retention. */
  purge(nowMs: number): Promise<number>
}

/** Options of {@link createOutcomeService}. */
export interface OutcomeServiceOptions {
  /** Undefined: the store has no outcome storage (every call is UPSTREAM_UNAVAILABLE; answers get no labels). */
  store: OutcomeStore | undefined
  nowMs: () => number
  retentionDays: number
  warn: (fields: Record<string, unknown>, message: string) => void
}

/** An item's subject and hashes, or its per-item error (unknown request id, an input that cannot be labelled). */
function resolveItem(
  item: OutcomeItem,
  index: number,
  known: Map<string, InputHashes>,
  hash: (type: OutcomeInputType, value: string) => string,
  retentionDays: number,
): Omit<NewOutcome, 'id' | 'note' | 'outcome'> | { error: OutcomeItemResult } {
  if (item.request_id !== undefined) {
    const hashes = known.get(item.request_id)
    if (!hashes) {
      const message = `No answered request ${item.request_id} of this org and key mode in the last ${retentionDays} days.`
      return { error: { index, id: null, status: 'not_found', error: { code: 'NOT_FOUND', message } } }
    }
    return { requestId: item.request_id, subject: `${axisOf(item.outcome)}:${item.request_id}`, ...hashes }
  }
  const type = item.type as OutcomeInputType
  const n = outcomeInputKey(type, item.input as string)
  if (!n.ok) return { error: { index, id: null, status: 'invalid_input', error: { code: 'INVALID_INPUT', message: `outcomes[${index}].input is ${n.reason}.` } } }
  const h = hash(type, n.key)
  return { requestId: null, subject: `${axisOf(item.outcome)}:${type}:${h}`, email: null, phone: null, ip: null, [type]: h }
}

/**
 * The writes of answers' input hashes (OutcomeService.keepInputs, forgetInputs): each request's write tracked until
 * it ends, so a flush waits for them all and a take-back follows its write; a failed batch logged once, not per
 * request.
 */
function createInputWrites(store: OutcomeStore, nowMs: () => number, warn: OutcomeServiceOptions['warn']) {
  const writing = new Set<Promise<void>>()
  /** The write of each request's input hashes, while it runs. */
  const keeping = new Map<string, Promise<void>>()
  const told = new WeakSet<object>()
  const notKept = (e: unknown): void => {
    if (typeof e === 'object' && e !== null) {
      if (told.has(e)) return
      told.add(e)
    }
    warn({ err: e }, `outcomes: input hashes of answers not kept (${(e as Error).message})`)
  }
  /** Tracks `w` (which never rejects) until it ends. */
  const track = (w: Promise<void>): Promise<void> => {
    writing.add(w)
    void w.then(() => writing.delete(w))
    return w
  }
  return {
    keep(owner: OutcomeOwner, requestId: string, inputs: InputHashes): void {
      // now, in the request's turn: the store writes the row with the turn's settlements (OutcomeStore.recordInputs)
      const row: AnswerInputsRecord = { orgId: owner.orgId, mode: owner.mode, requestId, at: nowMs(), ...inputs }
      let done: Promise<void>
      try {
        done = Promise.resolve(store.recordInputs([row]))
      } catch (e) {
        return notKept(e)
      }
      const w = track(done.then(() => {}, notKept))
      keeping.set(requestId, w)
      void w.then(() => keeping.get(requestId) === w && keeping.delete(requestId))
    },
    forget(owner: OutcomeOwner, requestId: string): void {
      // after the write (it may still wait for its turn's commit), never before it
      track(
        Promise.resolve(keeping.get(requestId))
          .then(() => store.forgetInputs(owner.orgId, owner.mode, [requestId]))
          .then(
            () => {},
            (e: unknown) => warn({ err: e, org_id: owner.orgId }, `outcomes: input hashes of a refused request not deleted (${(e as Error).message})`),
          ),
      )
    },
    async flush(): Promise<void> {
      await Promise.all([...writing])
    },
  }
}

/** Creates the outcomes of a server. */
export function createOutcomeService(options: OutcomeServiceOptions): OutcomeService {
  const { store, nowMs, warn } = options
  const retentionMs = options.retentionDays * 24 * 60 * 60 * 1000
  let key: string | undefined
  // the least recently used owner goes first (lru-cache: O(1), where a Map's oldest key costs a scan of its deleted slots)
  const labels = new LRUCache<string, Labels>({ max: MAX_OWNERS })
  const inputWrites = store ? createInputWrites(store, nowMs, warn) : null
  const loading = new Map<string, Promise<Labels | null>>()
  let loads = 0

  const need = (): OutcomeStore => {
    if (!store) throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'Outcomes need the SQLite or PostgreSQL store; this server runs without one.')
    return store
  }
  const hmacKey = async (): Promise<string> => (key ??= await need().hmacKey())
  const hash = (k: string, type: OutcomeInputType, value: string) => createHmac('sha256', k).update(`${type}:${value}`).digest('hex')

  /** Reads the owner's current labels (one read at a time per owner) and keeps them unless newer ones are kept. */
  const load = (k: string, owner: OutcomeOwner): Promise<Labels | null> => {
    let p = loading.get(k)
    if (!p) {
      p = (async () => {
        loads++
        const read = await need().currentLabels(owner.orgId, owner.mode)
        if (read.version === null) return null
        const l: Labels = { version: read.version, sets: foldLabels(read.rows) }
        const had = labels.get(k)
        if (!had || had.version <= l.version) {
          labels.set(k, l)
        }
        return l
      })().finally(() => loading.delete(k))
      loading.set(k, p)
    }
    return p
  }
  /**
   * The owner's labels at `version` or later: the kept ones when recent enough (no read), else read again (a read
   * that started before the version was bumped is followed by one more).
   */
  const labelsOf = async (owner: OutcomeOwner, known: number | null | undefined): Promise<Labels | null> => {
    const version = known !== undefined ? known : await need().version(owner.orgId, owner.mode)
    if (version === null) return null
    const k = `${owner.orgId}|${owner.mode}`
    const hit = labels.get(k)
    if (hit && hit.version >= version) return hit
    const l = await load(k, owner)
    return l && l.version >= version ? l : load(k, owner)
  }

  const flush = async (): Promise<void> => inputWrites?.flush()

  return {
    async prepare(owner, known) {
      const inputs: InputHashes = { email: null, phone: null, ip: null }
      if (!store) return { hook: () => null, inputs: null }
      let k: string
      let l: Labels | null
      try {
        k = await hmacKey()
        l = await labelsOf(owner, known)
      } catch (e) {
        // The database is down: the answer goes out without labels, and its inputs are not kept.
        warn({ err: e, org_id: owner.orgId }, `outcomes: labels not applied (${(e as Error).message})`)
        return { hook: () => null, inputs: null }
      }
      const sets = l?.sets ?? null
      const keyOf = (t: OutcomeInputType, v: string) => hash(k, t, v)
      const keep = (t: OutcomeInputType, h: string) => (inputs[t] = h)
      const hook: AnswerLabels = (type, details) => labelFactors(sets, answerValues(type, details), keyOf, keep)
      return { hook, inputs }
    },
    keepInputs(owner, requestId, inputs) {
      if (inputs) inputWrites?.keep(owner, requestId, inputs)
    },
    forgetInputs(owner, requestId) {
      inputWrites?.forget(owner, requestId)
    },
    async record(owner, items) {
      const s = need()
      const k = await hmacKey()
      await flush() // answers of this instance just given are known by their request ids
      const ids = items.flatMap((it) => (it.request_id !== undefined ? [it.request_id] : []))
      const known = await s.inputsOf(owner.orgId, owner.mode, [...new Set(ids)])
      const results: OutcomeItemResult[] = []
      const batch: Array<{ index: number; outcome: NewOutcome }> = []
      for (const [index, item] of items.entries()) {
        const resolved = resolveItem(item, index, known, (type, v) => hash(k, type, v), options.retentionDays)
        if ('error' in resolved) results[index] = resolved.error
        else batch.push({ index, outcome: { id: `out_${randomBytes(12).toString('hex')}`, note: item.note ?? null, outcome: item.outcome, ...resolved } })
      }
      const recorded = batch.length > 0 ? await s.recordOutcomes(owner.orgId, owner.mode, batch.map((b) => b.outcome), nowMs()) : []
      batch.forEach((b, i) => {
        const r = recorded[i]!
        results[b.index] = { index: b.index, id: r.record.id, status: r.status, error: null }
      })
      // the write bumped the org's outcome version: this instance reads the labels now, the others on their next
      // request of the org (the auth read returns the new version)
      if (recorded.some((r) => r.status === 'recorded')) await load(`${owner.orgId}|${owner.mode}`, owner)
      return results
    },
    async list(owner, query) {
      const scope: PageScope = { listing: 'outcomes', orgId: owner.orgId, mode: owner.mode, filters: { request_id: query.requestId, outcome: query.outcome } }
      const beforeSeq = query.cursor === undefined ? undefined : seqOfPageCursor(query.cursor, scope)
      const page = await need().listOutcomes(owner.orgId, owner.mode, {
        limit: query.limit,
        ...(query.requestId !== undefined ? { requestId: query.requestId } : {}),
        ...(query.outcome !== undefined ? { outcome: query.outcome } : {}),
        ...(beforeSeq !== undefined ? { beforeSeq } : {}),
      })
      return { data: page.data, next_cursor: page.nextSeq === null ? null : encodePageCursor(page.nextSeq, scope) }
    },
    get loads() {
      return loads
    },
    flush,
    purge: async (now) => (store ? store.purge(now - retentionMs) : 0),
  }
}
