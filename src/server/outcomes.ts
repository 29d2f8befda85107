/**
 * Outcomes in the server (docs/outcomes.md): recording labels (POST /v1/outcomes), listing them, keeping the input
 * hashes of answered requests, and the per-request hook that adds `email_bounced_before` / `reported_fraud_before`
 * to later answers of the same org and key mode. Why it is built this way: docs/decisions.md "Outcomes".
 */
import { createHmac, randomBytes } from 'node:crypto'
import { asciiDomain, canonicalEmailOf } from '../checks/email/canonical.js'
import { RiskcheckError } from '../errors.js'
import { normalizeListValue } from '../lists/normalize.js'
import type { AnswerLabels } from '../lookup.js'
import type { LookupType } from '../schema.js'
import type { FactorCode } from '../scoring/factors.js'
import type { AnswerInputsRecord, InputHashes, NewOutcome, OutcomeKind, OutcomeMode, OutcomeRecord, OutcomeStore } from './store/contracts/outcomes.js'

/** Default retention of outcomes and of the input hashes of answered requests, in days. */
export const DEFAULT_OUTCOME_RETENTION_DAYS = 180
/** Most outcomes in one POST /v1/outcomes. */
export const MAX_OUTCOMES_PER_CALL = 1000
/** How often an instance re-reads which orgs have outcomes and their labels (outcomes recorded by other instances). */
const REFRESH_MS = 60_000

/** The input types a label can be given for. */
export const OUTCOME_INPUT_TYPES = ['email', 'phone', 'ip'] as const
export type OutcomeInputType = (typeof OUTCOME_INPUT_TYPES)[number]

const FRAUD: ReadonlySet<OutcomeKind> = new Set(['fraud', 'chargeback', 'account_takeover'])
/** Outcomes about mail to the address; the others are about the transaction. Each axis has its own current outcome. */
const DELIVERY: ReadonlySet<OutcomeKind> = new Set(['bounced', 'delivered', 'spam_complaint'])
const axisOf = (o: OutcomeKind) => (DELIVERY.has(o) ? 'delivery' : 'risk')

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

/** The labels of one org and mode, as the answer hook reads them. */
interface Labels {
  bounced: Set<string>
  fraud: Set<string>
  loadedAt: number
}

/** A request's labels hook and the input hashes it collected from the answers it saw. */
export interface RequestLabels {
  hook: AnswerLabels
  /** Null when they cannot be kept (no outcome storage, or its key could not be read). */
  inputs: InputHashes | null
}

/** The server's outcomes. */
export interface OutcomeService {
  /** Before a lookup: the hook that adds the org's labels (and collects the request's input hashes). */
  prepare(owner: OutcomeOwner): Promise<RequestLabels>
  /**
   * Keeps a request's input hashes: call it in the turn the request is answered, before its settlement — the store
   * writes them with the turn's settlements (never throws; a failure is logged).
   */
  keepInputs(owner: OutcomeOwner, requestId: string, inputs: InputHashes | null): void
  record(owner: OutcomeOwner, items: readonly OutcomeItem[]): Promise<OutcomeItemResult[]>
  list(owner: OutcomeOwner, query: { requestId?: string; outcome?: OutcomeKind; cursor?: string; limit: number }): Promise<{ data: OutcomeRecord[]; next_cursor: string | null }>
  /** Reads which orgs have outcomes (at start). */
  preload(): Promise<void>
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

/** The compared form of an input of `type` (the lists' normalisation), or why it cannot be labelled. */
export function outcomeInputKey(type: OutcomeInputType, input: string): { ok: true; key: string } | { ok: false; reason: string } {
  const n = normalizeListValue(type, input)
  if (!n.ok) return n
  if (type === 'ip' && n.key.includes('/')) return { ok: false, reason: 'a network, not one IP address' }
  return { ok: true, key: n.key }
}

/** The compared forms of the email, phone and IP an answer's details carry (what lists compare). */
function valuesOf(type: LookupType, details: unknown): { email?: string; phone?: string; ip?: string } {
  if (details === null || typeof details !== 'object') return {}
  const d = details as Record<string, unknown>
  if (type === 'email') {
    if (d.syntax_valid !== true || typeof d.domain !== 'string' || typeof d.local_part !== 'string') return {}
    const ascii = asciiDomain(d.domain)
    return ascii === null ? {} : { email: canonicalEmailOf(d.local_part, ascii) }
  }
  if (type === 'phone' || type === 'phone_type') return typeof d.e164 === 'string' && d.e164 !== '' ? { phone: d.e164 } : {}
  if (type === 'ip' && typeof d.ip === 'string') {
    const n = outcomeInputKey('ip', d.ip)
    return n.ok ? { ip: n.key } : {}
  }
  return {}
}

const WHAT = { email: 'email address', phone: 'phone number', ip: 'IP address' } as const

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

/** Creates the outcomes of a server. */
export function createOutcomeService(options: OutcomeServiceOptions): OutcomeService {
  const { store, nowMs, warn } = options
  const retentionMs = options.retentionDays * 24 * 60 * 60 * 1000
  let key: string | undefined
  let labelled: Set<string> | undefined
  let labelledAt = 0
  const labels = new Map<string, Labels>()
  // input-hash writes not yet committed, and the failures already logged (one line per failed batch, not per request)
  const writing = new Set<Promise<void>>()
  const told = new WeakSet<object>()

  const need = (): OutcomeStore => {
    if (!store) throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'Outcomes need the SQLite or PostgreSQL store; this server runs without one.')
    return store
  }
  const hmacKey = async (): Promise<string> => (key ??= await need().hmacKey())
  const hash = (k: string, type: OutcomeInputType, value: string) => createHmac('sha256', k).update(`${type}:${value}`).digest('hex')

  const refreshLabelled = async (): Promise<void> => {
    labelledAt = nowMs()
    labelled = new Set(await need().labelledOrgs())
  }
  const loadLabels = async (owner: OutcomeOwner): Promise<Labels> => {
    const rows = [...(await need().currentLabels(owner.orgId, owner.mode))].sort((a, b) => a.seq - b.seq)
    const emailState = new Map<string, OutcomeKind>()
    const fraud = new Set<string>()
    for (const r of rows) {
      if ((r.outcome === 'bounced' || r.outcome === 'delivered') && r.email) emailState.set(r.email, r.outcome)
      if (FRAUD.has(r.outcome)) for (const h of [r.email, r.phone, r.ip]) if (h) fraud.add(h)
    }
    const bounced = new Set([...emailState].filter(([, o]) => o === 'bounced').map(([h]) => h))
    const l = { bounced, fraud, loadedAt: nowMs() }
    labels.set(`${owner.orgId}|${owner.mode}`, l)
    return l
  }
  /** The org's labels: none without a read when it has no outcomes; stale ones are served while they are re-read. */
  const labelsOf = async (owner: OutcomeOwner): Promise<Labels | null> => {
    if (!labelled || nowMs() - labelledAt > REFRESH_MS) {
      const refresh = refreshLabelled().catch((e: unknown) => warn({ err: e }, `outcomes: reading the labelled orgs failed (${(e as Error).message})`))
      if (!labelled) await refresh
    }
    const k = `${owner.orgId}|${owner.mode}`
    if (!labelled?.has(k)) return null
    const l = labels.get(k)
    if (!l) return loadLabels(owner)
    if (nowMs() - l.loadedAt > REFRESH_MS) {
      l.loadedAt = nowMs() // one re-read at a time
      loadLabels(owner).catch((e: unknown) => warn({ err: e, org_id: owner.orgId }, `outcomes: re-reading labels failed (${(e as Error).message})`))
    }
    return l
  }

  const notKept = (e: unknown): void => {
    if (typeof e === 'object' && e !== null) {
      if (told.has(e)) return
      told.add(e)
    }
    warn({ err: e }, `outcomes: input hashes of answers not kept (${(e as Error).message})`)
  }
  const flush = async (): Promise<void> => {
    await Promise.all([...writing])
  }

  return {
    async prepare(owner) {
      const inputs: InputHashes = { email: null, phone: null, ip: null }
      if (!store) return { hook: () => null, inputs: null }
      let k: string
      let l: Labels | null
      try {
        k = await hmacKey()
        l = await labelsOf(owner)
      } catch (e) {
        // The database is down: the answer goes out without labels, and its inputs are not kept.
        warn({ err: e, org_id: owner.orgId }, `outcomes: labels not applied (${(e as Error).message})`)
        return { hook: () => null, inputs: null }
      }
      const hook: AnswerLabels = (type, details) => {
        const values = valuesOf(type, details)
        const factors: FactorCode[] = []
        const reasons: Partial<Record<FactorCode, string>> = {}
        for (const t of OUTCOME_INPUT_TYPES) {
          const v = values[t]
          if (v === undefined) continue
          const h = hash(k, t, v)
          inputs[t] = h
          if (l?.bounced.has(h) && t === 'email') (factors.push('email_bounced_before'), (reasons.email_bounced_before = 'You reported a hard bounce of mail to this address.'))
          if (l?.fraud.has(h) && !factors.includes('reported_fraud_before')) {
            factors.push('reported_fraud_before')
            reasons.reported_fraud_before = `You reported fraud for a request with this ${WHAT[t]}.`
          }
        }
        return factors.length > 0 ? { factors, reasons } : null
      }
      return { hook, inputs }
    },
    keepInputs(owner, requestId, inputs) {
      if (!store || !inputs) return
      // now, in the request's turn: the store writes the row with the turn's settlements (OutcomeStore.recordInputs)
      const row: AnswerInputsRecord = { orgId: owner.orgId, mode: owner.mode, requestId, at: nowMs(), ...inputs }
      let done: Promise<void>
      try {
        done = Promise.resolve(store.recordInputs([row]))
      } catch (e) {
        return notKept(e)
      }
      const w: Promise<void> = done.then(
        () => void writing.delete(w),
        (e: unknown) => (writing.delete(w), notKept(e)),
      )
      writing.add(w)
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
      if (recorded.some((r) => r.status === 'recorded')) {
        labelled?.add(`${owner.orgId}|${owner.mode}`)
        await loadLabels(owner)
      }
      return results
    },
    async list(owner, query) {
      let beforeSeq: number | undefined
      if (query.cursor !== undefined) {
        if (!/^[1-9][0-9]{0,15}$/.test(query.cursor)) throw new RiskcheckError('INVALID_REQUEST', 'cursor is not a next_cursor of this list.')
        beforeSeq = Number(query.cursor)
      }
      const page = await need().listOutcomes(owner.orgId, owner.mode, {
        limit: query.limit,
        ...(query.requestId !== undefined ? { requestId: query.requestId } : {}),
        ...(query.outcome !== undefined ? { outcome: query.outcome } : {}),
        ...(beforeSeq !== undefined ? { beforeSeq } : {}),
      })
      return { data: page.data, next_cursor: page.nextSeq === null ? null : String(page.nextSeq) }
    },
    async preload() {
      if (store) await refreshLabelled()
    },
    flush,
    purge: async (now) => (store ? store.purge(now - retentionMs) : 0),
  }
}
