/**
 * Which outcome labels apply to an answer — one implementation for the service (labels keyed by HMAC hashes of the
 * inputs, src/server/outcomes.ts) and the library (labels keyed by the inputs themselves, ./holder.ts). See
 * docs/outcomes.md "Effect on later answers" and docs/decisions.md "Outcomes".
 */
import { asciiDomain, canonicalEmailOf } from '../checks/email/canonical.js'
import { normalizeListValue } from '../lists/normalize.js'
import { OUTCOME_INPUT_TYPES, type LookupType, type OutcomeInputType, type OutcomeKind } from '../schema.js'
import type { FactorCode } from '../scoring/factors.js'

/** Risk outcomes that mark their subject's inputs (`reported_fraud_before`). */
export const FRAUD_OUTCOMES: ReadonlySet<OutcomeKind> = new Set(['fraud', 'chargeback', 'account_takeover'])
/** Outcomes about mail to the address; the others are about the transaction. Each axis has its own current outcome. */
export const DELIVERY_OUTCOMES: ReadonlySet<OutcomeKind> = new Set(['bounced', 'delivered', 'spam_complaint'])
/** The axis of an outcome: a subject has one current outcome on each. */
export const axisOf = (o: OutcomeKind): 'delivery' | 'risk' => (DELIVERY_OUTCOMES.has(o) ? 'delivery' : 'risk')

/** The compared form of an input of `type` (the lists' normalisation), or why it cannot be labelled. */
export function outcomeInputKey(type: OutcomeInputType, input: string): { ok: true; key: string } | { ok: false; reason: string } {
  const n = normalizeListValue(type, input)
  if (!n.ok) return n
  if (type === 'ip' && n.key.includes('/')) return { ok: false, reason: 'a network, not one IP address' }
  return { ok: true, key: n.key }
}

/** The compared forms of the email, phone and IP of an answer. */
export type AnswerValues = Partial<Record<OutcomeInputType, string>>

/** The compared forms of the email, phone and IP an answer's details carry (what lists compare). */
export function answerValues(type: LookupType, details: unknown): AnswerValues {
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

/**
 * A current label: the current outcome of one subject on one axis, with the keys of the inputs it is about (a
 * subject given by request id has up to three; one given by input has one). `seq` orders labels: higher is later.
 */
export interface CurrentLabelKeys {
  seq: number
  outcome: OutcomeKind
  /** The request it was given for, or null when it was given by input. */
  requestId: string | null
  email: string | null
  phone: string | null
  ip: string | null
}

/** The risk label behind `reported_fraud_before` on a key, for its sentence: what was reported, and how. */
export interface FraudLabel {
  outcome: OutcomeKind
  /** Given by input (`{ input, type }`), not by request id. */
  byInput: boolean
}

/** The keys the two factors apply to. */
export interface LabelSets {
  /** Email keys whose latest delivery label (`bounced`, `delivered`, `spam_complaint`) is `bounced`. */
  bounced: ReadonlySet<string>
  /** Email, phone and IP keys whose latest risk label is fraud, chargeback or account takeover: that label. */
  fraud: ReadonlyMap<string, FraudLabel>
}

/**
 * The label sets of current labels, the latest label naming a key deciding, whichever subject it came by: an address
 * is bounced when its latest delivery label is `bounced` (`delivered` and `spam_complaint` say the mail arrived); a
 * key is fraud when its latest risk label is fraud, chargeback or account takeover (`legitimate` clears it).
 */
export function foldLabels(current: readonly CurrentLabelKeys[]): LabelSets {
  const rows = [...current].sort((a, b) => a.seq - b.seq)
  const bounced = new Set<string>()
  const fraud = new Map<string, FraudLabel>()
  for (const r of rows) {
    if (r.email && (r.outcome === 'bounced' || r.outcome === 'delivered' || r.outcome === 'spam_complaint')) {
      if (r.outcome === 'bounced') bounced.add(r.email)
      else bounced.delete(r.email)
    }
    if (FRAUD_OUTCOMES.has(r.outcome)) {
      const label: FraudLabel = { outcome: r.outcome, byInput: r.requestId === null }
      for (const k of [r.email, r.phone, r.ip]) if (k) fraud.set(k, label)
    }
    if (r.outcome === 'legitimate') for (const k of [r.email, r.phone, r.ip]) if (k) fraud.delete(k)
  }
  return { bounced, fraud }
}

const WHAT = { email: 'email address', phone: 'phone number', ip: 'IP address' } as const
/** A risk outcome that sets `reported_fraud_before`, as its sentence names it. */
const REPORTED: Partial<Record<OutcomeKind, string>> = { fraud: 'fraud', chargeback: 'a chargeback', account_takeover: 'an account takeover' }

/** The factors of one answer and their sentences. */
export interface LabelFactors {
  factors: FactorCode[]
  reasons: Partial<Record<FactorCode, string>>
}

/**
 * The outcome factors of an answer with `values`: each value's key (`keyOf`; `seen` is told each one, so the service
 * can keep a request's input hashes) looked up in `sets`. Null when none applies.
 */
export function labelFactors(
  sets: LabelSets | null,
  values: AnswerValues,
  keyOf: (type: OutcomeInputType, value: string) => string,
  seen?: (type: OutcomeInputType, key: string) => void,
): LabelFactors | null {
  const factors: FactorCode[] = []
  const reasons: Partial<Record<FactorCode, string>> = {}
  for (const t of OUTCOME_INPUT_TYPES) {
    const v = values[t]
    if (v === undefined) continue
    const k = keyOf(t, v)
    seen?.(t, k)
    if (!sets) continue
    if (t === 'email' && sets.bounced.has(k)) {
      factors.push('email_bounced_before')
      reasons.email_bounced_before = 'You reported a hard bounce of mail to this address.'
    }
    const fraud = sets.fraud.get(k)
    if (fraud && !factors.includes('reported_fraud_before')) {
      factors.push('reported_fraud_before')
      const what = REPORTED[fraud.outcome] ?? fraud.outcome
      reasons.reported_fraud_before = `You reported ${what} for ${fraud.byInput ? 'this' : 'a request with this'} ${WHAT[t]}.`
    }
  }
  return factors.length > 0 ? { factors, reasons } : null
}

/**
 * The current labels of outcomes given by input, in order (later wins): per input and axis the last one. Keys are
 * `<type>:<compared form>` (what {@link plainKey} gives for an answer's values).
 */
export function currentByInput(entries: Iterable<{ type: OutcomeInputType; key: string; outcome: OutcomeKind }>): CurrentLabelKeys[] {
  const current = new Map<string, CurrentLabelKeys>()
  let seq = 0
  for (const e of entries) {
    const k = plainKey(e.type, e.key)
    const subject = `${axisOf(e.outcome)}:${k}`
    current.delete(subject) // re-inserted last: map order stays the order of seq
    current.set(subject, { seq: ++seq, outcome: e.outcome, requestId: null, email: null, phone: null, ip: null, [e.type]: k })
  }
  return [...current.values()]
}

/** The library's key of a compared value: its type and the value (no hashing: nothing leaves the process). */
export const plainKey = (type: OutcomeInputType, value: string): string => `${type}:${value}`
