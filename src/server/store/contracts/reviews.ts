/**
 * The storage of the review queue (docs/reviews.md): answers whose action was `review`, kept with what a reviewer
 * needs (the input among it), and the decision taken on each. Interfaces and record types only; implementations in
 * ../sqlite/reviews.ts and ../postgres/reviews.ts.
 */
import type { Awaitable } from '../../../accounts/types.js'
import type { EventPayload, LookupType } from '../../../schema.js'

/** What a reviewer decides. */
export const REVIEW_DECISIONS = ['approve', 'block'] as const
export type ReviewDecision = (typeof REVIEW_DECISIONS)[number]

/** Key mode: test keys have a queue of their own. */
export type ReviewMode = 'live' | 'test'

/** A fired factor with its weight under the policy that scored the answer. */
export interface ReviewFactor {
  code: string
  weight: number
}

/** A queue entry as an answer makes it. */
export interface NewReview {
  /** `rev_` + 24 hex digits. */
  id: string
  orgId: string
  mode: ReviewMode
  requestId: string
  type: LookupType
  /** The request's input as JSON text (a string for single lookups, an object for combined checks). */
  input: string
  score: number
  factors: ReviewFactor[]
  action: string
  /** Unix ms of the answer. */
  createdAt: number
  /**
   * The E.164 form of the phone number the answer read (a single phone lookup's, or a combined check's phone):
   * a number sent in national form with its `country` cannot be listed or labelled from the input alone. Null when
   * there is none (no phone, an invalid number, an entry stored before the column came).
   */
  phoneE164: string | null
}

/** A stored entry, with its decision once taken. */
export interface ReviewRecord extends NewReview {
  /** Ordering: higher is later. */
  seq: number
  decision: ReviewDecision | null
  /** `key:<key id>` or `user:<dashboard user id>`. */
  decidedBy: string | null
  decidedAt: number | null
  note: string | null
  /** The list the input was to be added to (set with the decision). */
  listId: string | null
  /** The outcome the decision recorded (set when the decision was carried out). */
  outcomeId: string | null
  /** When the decision was carried out (outcome recorded, list added to, event written); null before. */
  completedAt: number | null
}

/** Filters of {@link ReviewStore.listReviews}. */
export interface ReviewListQuery {
  type?: LookupType
  status?: 'pending' | 'decided'
  minScore?: number
  maxScore?: number
  /** Only entries where this factor fired. */
  factor?: string
  /** Only rows with a lower seq (the cursor). */
  beforeSeq?: number
  limit: number
  /** The retention's cutoff ({@link ReviewStore.purge}): entries the purge at it would delete are left out. */
  cutoffMs: number
}

/** A page of entries, newest first. */
export interface ReviewPage {
  data: ReviewRecord[]
  /** Pass back as `beforeSeq` for the next page; null on the last one. */
  nextSeq: number | null
}

/** The decision a reviewer takes, claimed before it is carried out. */
export interface ReviewClaim {
  decision: ReviewDecision
  decidedBy: string
  note: string | null
  listId: string | null
  at: number
  /** The retention's cutoff: an entry past it is not claimed (`not_found`, as if the purge had run). */
  cutoffMs: number
}

/** What claiming did: `claimed` (it was pending) or `decided` (it had a decision already: the record says which). */
export type ClaimResult = { status: 'claimed' | 'decided'; record: ReviewRecord } | { status: 'not_found' }

/**
 * Review queue storage of one database. Methods may answer synchronously (SQLite) or with a promise (PostgreSQL).
 * Reads and claims take the retention's cutoff, the one {@link ReviewStore.purge} deletes by: an entry past it is
 * gone to them whether or not the purge has run yet.
 */
export interface ReviewStore {
  /** Adds entries (a repeated request id is ignored). */
  addReviews(rows: readonly NewReview[]): Awaitable<void>
  /** One entry of the org and mode (another org's or mode's, or one past `cutoffMs`: null). */
  getReview(orgId: string, mode: ReviewMode, id: string, cutoffMs: number): Awaitable<ReviewRecord | null>
  /** The org's entries in this mode, newest first. */
  listReviews(orgId: string, mode: ReviewMode, query: ReviewListQuery): Awaitable<ReviewPage>
  /**
   * Sets the decision of a pending entry not past the claim's cutoff, in the one statement that claims it; one of two
   * racing claims wins, the other sees `decided`.
   */
  claimDecision(orgId: string, mode: ReviewMode, id: string, claim: ReviewClaim): Awaitable<ClaimResult>
  /**
   * Marks a claimed decision carried out and writes `event` into the webhook outbox, in one transaction. False when it
   * was already carried out (no event written then).
   */
  completeDecision(orgId: string, mode: ReviewMode, id: string, done: { outcomeId: string | null; at: number }, event: EventPayload): Awaitable<boolean>
  /** Deletes entries decided before `cutoffMs`, and pending ones created before it. Returns how many went. */
  purge(cutoffMs: number): Awaitable<number>
}
