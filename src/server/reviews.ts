/**
 * The review queue in the server (docs/reviews.md): answers whose action is `review` are queued for their org and key
 * mode (written in batches, once per event-loop turn), listed for reviewers, and decided — the one code path of a
 * decision, which the API route and the dashboard both call: it records an outcome, optionally adds the input to a
 * list of the org, and writes the `review.decided` event. Why it is built this way: docs/decisions.md "Review queue".
 */
import { randomBytes } from 'node:crypto'
import { RiskcheckError } from '../errors.js'
import { normalizeListValue } from '../lists/normalize.js'
import type { ListItemType } from '../lists/types.js'
import type { LookupResult } from '../schema.js'
import { applyContext } from '../scoring/engine.js'
import type { Policy } from '../scoring/rules.js'
import { buildReviewDecidedEvent } from '../webhooks/events.js'
import { batchWriter } from './batch-writer.js'
import { listRoom } from './org-lists.js'
import { encodePageCursor, seqOfPageCursor, type PageScope } from './page-cursor.js'
import type { OutcomeService } from './outcomes.js'
import type { ListsStore } from './store/contracts/lists.js'
import { REVIEW_DECISIONS, type NewReview, type ReviewDecision, type ReviewMode, type ReviewRecord, type ReviewStore } from './store/contracts/reviews.js'
import { textProblem } from './text.js'

/** Who reviews: an org in one key mode. */
export interface ReviewOwner {
  orgId: string
  mode: ReviewMode
}

/** A decision as the route and the dashboard hand it over (checked here as well as by the route's schema). */
export interface DecisionInput {
  decision: string
  add_to_list?: string | null
  note?: string | null
}

/** What deciding did: the entry after it, and whether it had been decided (the same way) before this call. */
export interface DecisionResult {
  review: ReviewRecord
  alreadyDecided: boolean
}

/** Filters of {@link ReviewService.list}. */
export interface ReviewQuery {
  type?: ReviewRecord['type']
  status?: 'pending' | 'decided'
  minScore?: number
  maxScore?: number
  factor?: string
  cursor?: string
  limit: number
}

/** The server's review queue. */
export interface ReviewService {
  /** Queues an answer whose action is `review` (written with others at the end of the turn; never throws). */
  enqueue(owner: ReviewOwner, result: LookupResult<unknown>, policy: Policy): void
  list(owner: ReviewOwner, query: ReviewQuery): Promise<{ data: ReviewRecord[]; next_cursor: string | null }>
  /** Decides an entry; `decidedBy` is `key:<id>` or `user:<id>`. */
  decide(owner: ReviewOwner, id: string, input: DecisionInput, decidedBy: string): Promise<DecisionResult>
  flush(): Promise<void>
  /** Deletes entries decided (or, still pending, created) longer than the retention ago. */
  purge(nowMs: number): Promise<number>
}

/** Options of {@link createReviewService}. */
export interface ReviewServiceOptions {
  /** Undefined: the store has no review storage (every call is UPSTREAM_UNAVAILABLE; nothing is queued). */
  store: ReviewStore | undefined
  outcomes: OutcomeService
  lists: ListsStore | undefined
  nowMs: () => number
  retentionDays: number
  warn: (fields: Record<string, unknown>, message: string) => void
}

/** The outcome a decision records. */
const OUTCOME_OF = { approve: 'legitimate', block: 'fraud' } as const
/** The list kind a decision may add the input to. */
const KIND_OF = { approve: 'allow', block: 'block' } as const

const invalid = (message: string) => new RiskcheckError('INVALID_REQUEST', message)

/** The fired factors of an answer with their weights under the policy (and the combined check's context) that scored it. */
function factorsOf(result: LookupResult<unknown>, policy: Policy) {
  const details = result.details as { context?: unknown } | null
  const context = result.request.type === 'check' && typeof details?.context === 'string' ? details.context : null
  const weights = applyContext(policy, context as Parameters<typeof applyContext>[1]).weights as Record<string, number | undefined>
  return result.risk.factors.map((code) => ({ code, weight: weights[code] ?? 0 }))
}

/** The E.164 number an answer read: a phone lookup's, or a combined check's phone part's; null when none. */
function phoneE164Of(result: LookupResult<unknown>): string | null {
  const details = result.details as { e164?: unknown; phone?: { e164?: unknown } | null } | null
  const e164 = result.request.type === 'check' ? details?.phone?.e164 : result.request.type === 'phone' || result.request.type === 'phone_type' ? details?.e164 : null
  return typeof e164 === 'string' && e164 !== '' ? e164 : null
}

/**
 * The inputs of an entry by kind (a single lookup's string, or the combined check's fields); the phone number in the
 * E.164 form its answer read where the entry has it (an input in national form needs its country).
 */
function inputsOf(review: ReviewRecord): { email?: string; phone?: string; ip?: string; domain?: string } {
  const raw = rawInputsOf(review)
  return review.phoneE164 !== null && raw.phone !== undefined ? { ...raw, phone: review.phoneE164 } : raw
}

/** The inputs of an entry as sent. */
function rawInputsOf(review: ReviewRecord): { email?: string; phone?: string; ip?: string; domain?: string } {
  const input = JSON.parse(review.input) as unknown
  if (review.type === 'check') {
    const o = (input ?? {}) as Record<string, unknown>
    const pick = (k: string) => (typeof o[k] === 'string' && o[k] !== '' ? { [k]: o[k] as string } : {})
    return { ...pick('email'), ...pick('phone'), ...pick('ip') }
  }
  if (typeof input !== 'string') return {}
  if (review.type === 'email') return { email: input }
  if (review.type === 'phone' || review.type === 'phone_type') return { phone: input }
  if (review.type === 'ip') return { ip: input }
  return { domain: input }
}

/** The value of an entry's input a list of `itemType` takes, normalised, or why there is none (a 400). */
function listValueOf(review: ReviewRecord, itemType: ListItemType): string {
  const inputs = inputsOf(review)
  const email = inputs.email
  const raw =
    itemType === 'email' ? email
    : itemType === 'email_domain' ? (email !== undefined ? email.slice(email.lastIndexOf('@') + 1) : inputs.domain)
    : itemType === 'ip' ? inputs.ip
    : itemType === 'phone' ? inputs.phone
    : undefined
  if (raw === undefined) throw invalid(`add_to_list: the input of this ${review.type} review has no value for a list of ${itemType} items.`)
  const n = normalizeListValue(itemType, raw)
  if (!n.ok) throw invalid(`add_to_list: the input is ${n.reason} for a list of ${itemType} items.`)
  return n.value
}

/** The decision's fields checked (the route's schema says the same; the dashboard's form reaches here too). */
function checkInput(input: DecisionInput): { decision: ReviewDecision; listId: string | null; note: string | null } {
  if (!(REVIEW_DECISIONS as readonly string[]).includes(input.decision)) throw invalid('decision must be approve or block.')
  const listId = input.add_to_list === undefined || input.add_to_list === null || input.add_to_list === '' ? null : input.add_to_list
  const note = input.note === undefined || input.note === null || input.note === '' ? null : input.note
  if (listId !== null && (listId.length > 100 || textProblem('add_to_list', listId))) throw invalid('add_to_list is not a list id.')
  if (note !== null) {
    const problem = note.length > 500 ? '`note` is longer than 500 characters.' : textProblem('note', note)
    if (problem) throw invalid(problem)
  }
  return { decision: input.decision as ReviewDecision, listId, note }
}

/** Creates the review queue of a server. */
export function createReviewService(options: ReviewServiceOptions): ReviewService {
  const { store, outcomes, nowMs, warn } = options
  const retentionMs = options.retentionDays * 24 * 60 * 60 * 1000
  // the purge's cutoff at a time: an entry past it is gone to every read and claim, swept yet or not
  const cutoffAt = (ms: number) => ms - retentionMs

  const need = (): ReviewStore => {
    if (!store) throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'The review queue needs the SQLite or PostgreSQL store; this server runs without one.')
    return store
  }

  // a flush waits for the batch in flight, so a read after it sees every answer given before, in the order given
  // (seq is the insert order)
  const queue = batchWriter<NewReview>(async (batch) => {
    try {
      await store!.addReviews(batch)
    } catch (e) {
      warn({ err: e }, `reviews: ${batch.length} answer(s) not queued for review (${(e as Error).message})`)
    }
  }, 1000)
  const flush = () => queue.flush()

  /** The list `listId` of the owner, checked against the decision; its value for the entry. 400 when it does not fit. */
  const listTarget = async (owner: ReviewOwner, listId: string, decision: ReviewDecision, review: ReviewRecord): Promise<string> => {
    if (!options.lists) throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'Lists need the SQLite or PostgreSQL store; this server runs without one.')
    // the owner's lists with their counts, read once: the list itself and what the limits need
    const all = await options.lists.listLists(owner)
    const list = all.find((l) => l.id === listId)
    if (!list) throw invalid(`add_to_list: no list ${JSON.stringify(listId.slice(0, 64))} of this org in ${owner.mode} mode.`)
    const a = (kind: string) => (kind === 'allow' ? 'an allow' : 'a block')
    if (list.kind !== KIND_OF[decision]) throw invalid(`add_to_list: ${decision} adds to ${a(KIND_OF[decision])} list; ${list.name} is ${a(list.kind)} list.`)
    // a first decision only: a retry finishes the add it began (the value may be on the list already)
    const full = review.decision === null ? listRoom(all, list, 1) : null
    if (full !== null) throw invalid(`add_to_list: ${full}`)
    return listValueOf(review, list.itemType)
  }

  /** Records the decision's outcome: by request id, else (its input hashes gone) by each input. Its id, or null. */
  const recordOutcome = async (owner: ReviewOwner, review: ReviewRecord, decision: ReviewDecision, note: string | null): Promise<string | null> => {
    const outcome = OUTCOME_OF[decision]
    const [byId] = await outcomes.record(owner, [{ request_id: review.requestId, outcome, note }])
    if (byId?.id) return byId.id
    const inputs = inputsOf(review)
    const items = (['email', 'phone', 'ip'] as const).flatMap((type) => (inputs[type] !== undefined ? [{ input: inputs[type], type, outcome, note }] : []))
    if (items.length === 0) return null
    return (await outcomes.record(owner, items)).find((r) => r.id !== null)?.id ?? null
  }

  return {
    enqueue(owner, result, policy) {
      if (!store || result.recommendation.action !== 'review') return
      let entry: NewReview
      try {
        entry = {
          id: `rev_${randomBytes(12).toString('hex')}`,
          orgId: owner.orgId,
          mode: owner.mode,
          requestId: result.request.id,
          type: result.request.type,
          input: JSON.stringify(result.request.input ?? null),
          score: result.risk.score,
          factors: factorsOf(result, policy),
          action: result.recommendation.action,
          createdAt: nowMs(),
          phoneE164: phoneE164Of(result),
        }
      } catch (e) {
        warn({ err: e, org_id: owner.orgId }, `reviews: answer not queued (${(e as Error).message})`)
        return
      }
      queue.add(entry)
    },
    async list(owner, query) {
      const { type, status, minScore: min_score, maxScore: max_score, factor } = query
      const scope: PageScope = { listing: 'reviews', orgId: owner.orgId, mode: owner.mode, filters: { type, status, min_score, max_score, factor } }
      const beforeSeq = query.cursor === undefined ? undefined : seqOfPageCursor(query.cursor, scope)
      // an empty range is a mistake of the query, not an empty queue
      if (query.minScore !== undefined && query.maxScore !== undefined && query.minScore > query.maxScore) {
        throw invalid(`\`min_score\` (${query.minScore}) must not be greater than \`max_score\` (${query.maxScore}).`)
      }
      const { cursor, ...filters } = query
      await flush()
      const page = await need().listReviews(owner.orgId, owner.mode, { ...filters, ...(beforeSeq !== undefined ? { beforeSeq } : {}), cutoffMs: cutoffAt(nowMs()) })
      return { data: page.data, next_cursor: page.nextSeq === null ? null : encodePageCursor(page.nextSeq, scope) }
    },
    async decide(owner, id, input, decidedBy) {
      const s = need()
      const { decision, listId, note } = checkInput(input)
      await flush() // an answer of this instance just given is in the queue
      let review = await s.getReview(owner.orgId, owner.mode, id, cutoffAt(nowMs()))
      if (!review) throw new RiskcheckError('NOT_FOUND', `No review ${JSON.stringify(id.slice(0, 64))}.`)
      const conflict = (r: ReviewRecord) => new RiskcheckError('CONFLICT', `Review ${r.id} was already decided: ${r.decision}.`)
      if (review.decision !== null && review.decision !== decision) throw conflict(review)
      if (review.completedAt !== null) return { review, alreadyDecided: true }
      // A retry of a decision a crash left half done finishes it with the list it named.
      let target = review.decision === null ? listId : review.listId
      let value = target !== null ? await listTarget(owner, target, decision, review) : null
      if (review.decision === null) {
        const at = nowMs()
        const claimed = await s.claimDecision(owner.orgId, owner.mode, id, { decision, decidedBy, note, listId: target, at, cutoffMs: cutoffAt(at) })
        if (claimed.status === 'not_found') throw new RiskcheckError('NOT_FOUND', `No review ${JSON.stringify(id.slice(0, 64))}.`)
        if (claimed.record.decision !== decision) throw conflict(claimed.record)
        review = claimed.record
        if (review.listId !== target) {
          // another call decided it the same way first, naming another list: its list stands
          target = review.listId
          value = target !== null ? await listTarget(owner, target, decision, review).catch(() => null) : null
        }
      }
      const outcomeId = await recordOutcome(owner, review, decision, review.note)
      if (target !== null && value !== null) {
        await options.lists!.addItems(owner, target, [{ value, reason: `review ${review.id}: ${decision}`, expiresAt: null }], nowMs())
      }
      const data = {
        review_id: review.id,
        request_id: review.requestId,
        type: review.type,
        mode: owner.mode,
        decision,
        decided_by: review.decidedBy ?? decidedBy,
        outcome_id: outcomeId,
        list_id: target,
      }
      const event = buildReviewDecidedEvent({ orgId: owner.orgId, now: new Date(nowMs()), data, testMode: owner.mode === 'test' })
      const completed = await s.completeDecision(owner.orgId, owner.mode, id, { outcomeId, at: nowMs() }, event)
      const after = (await s.getReview(owner.orgId, owner.mode, id, cutoffAt(nowMs()))) ?? review
      return { review: after, alreadyDecided: !completed }
    },
    flush,
    purge: async (now) => (store ? store.purge(cutoffAt(now)) : 0),
  }
}
