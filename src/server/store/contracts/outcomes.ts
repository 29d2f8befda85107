/**
 * The storage of outcomes (docs/outcomes.md): labels of what happened after an answer, and the keyed hashes of the
 * inputs of each answered request that let a label given by request id reach the email, phone and IP it came with.
 * Interfaces and record types only; implementations in ../sqlite/outcomes.ts and ../postgres/outcomes.ts.
 */
import type { Awaitable } from '../../../accounts/types.js'
import { OUTCOME_KINDS, type OutcomeKind } from '../../../schema.js'

/** The outcomes a caller can record (defined with the library's schema, which reads them offline too). */
export { OUTCOME_KINDS, type OutcomeKind }

/** Key mode: test-key outcomes and answers never meet live ones. */
export type OutcomeMode = 'live' | 'test'

/** The keyed hashes (HMAC-SHA256, hex) of a request's normalised inputs; null where the request had none. */
export interface InputHashes {
  email: string | null
  phone: string | null
  ip: string | null
}

/** The inputs of one answered request, kept for the outcome retention period. */
export interface AnswerInputsRecord extends InputHashes {
  orgId: string
  mode: OutcomeMode
  requestId: string
  /** Unix ms of the answer. */
  at: number
}

/** One stored outcome (a row of the history). */
export interface OutcomeRecord extends InputHashes {
  /** `out_` + 24 hex digits. */
  id: string
  /** Ordering of the history: higher is later. */
  seq: number
  orgId: string
  mode: OutcomeMode
  /** The request the label is about, or null when it was given by input. */
  requestId: string | null
  /**
   * What the label is about, with its axis (`delivery`: bounced, delivered, spam_complaint; `risk`: the others):
   * `<axis>:<request id>`, or `<axis>:<type>:<hash>` for a label given by input. Each subject has one current outcome.
   */
  subject: string
  outcome: OutcomeKind
  note: string | null
  /** Unix ms. */
  createdAt: number
  /** Unix ms when a later, different outcome of the same subject replaced it; null while current. */
  supersededAt: number | null
}

/** A new outcome: its subject and hashes resolved by the caller. */
export interface NewOutcome extends InputHashes {
  id: string
  requestId: string | null
  subject: string
  outcome: OutcomeKind
  note: string | null
}

/** What recording one outcome did. */
export type RecordedOutcome = { status: 'recorded'; record: OutcomeRecord } | { status: 'unchanged'; record: OutcomeRecord }

/** A page of outcomes, newest first. */
export interface OutcomePage {
  data: OutcomeRecord[]
  /** Pass back as `afterSeq` for the next page; null on the last one. */
  nextSeq: number | null
}

/** Filters of {@link OutcomeStore.listOutcomes}. */
export interface OutcomeListQuery {
  requestId?: string
  outcome?: OutcomeKind
  /** Only rows with a lower seq (the cursor). */
  beforeSeq?: number
  limit: number
}

/** The current (not superseded) labels of an org and mode: what answers are adjusted by. */
export interface CurrentLabel extends InputHashes {
  seq: number
  outcome: OutcomeKind
  /** The request it was given for, or null when it was given by input. */
  requestId: string | null
}

/** Outcome storage of one database. Methods may answer synchronously (SQLite) or with a promise (PostgreSQL). */
export interface OutcomeStore {
  /** The deployment's HMAC key of input hashes (a `meta` row generated once). */
  hmacKey(): Awaitable<string>
  /**
   * Keeps the input hashes of answered requests (a repeated request id is ignored). Called in the turn a request is
   * answered, before its settlement: the engines write the rows of one event-loop turn with that turn's settlements
   * (SQLite: in its group commit; PostgreSQL: in the statement that closes the requests), resolving after the commit.
   */
  recordInputs(rows: readonly AnswerInputsRecord[]): Awaitable<void>
  /**
   * Deletes the input hashes of these requests of the org and mode (requests whose settlement was refused: their
   * answer was never given). Answers how many rows went.
   */
  forgetInputs(orgId: string, mode: OutcomeMode, requestIds: readonly string[]): Awaitable<number>
  /** The input hashes of requests of this org and mode, by request id (unknown, expired, another org's or mode's: absent). */
  inputsOf(orgId: string, mode: OutcomeMode, requestIds: readonly string[]): Awaitable<Map<string, InputHashes>>
  /**
   * Records outcomes in order, in one transaction: the same outcome as the subject's current one → `unchanged`;
   * otherwise the current one (if any) is marked superseded at `nowMs` and the new row inserted.
   */
  recordOutcomes(orgId: string, mode: OutcomeMode, outcomes: readonly NewOutcome[], nowMs: number): Awaitable<RecordedOutcome[]>
  /** The org's outcomes in this mode, newest first. */
  listOutcomes(orgId: string, mode: OutcomeMode, query: OutcomeListQuery): Awaitable<OutcomePage>
  /**
   * The current labels of an org and mode with the outcome version they are at (one consistent read; version null
   * and no rows when the org never had an outcome in this mode).
   */
  currentLabels(orgId: string, mode: OutcomeMode): Awaitable<{ version: number | null; rows: CurrentLabel[] }>
  /**
   * The outcome version of an org and mode: bumped in the same write as every recorded outcome and by a purge that
   * deleted some of its outcomes; null when it never had one. The auth read returns it with the API key.
   */
  version(orgId: string, mode: OutcomeMode): Awaitable<number | null>
  /** Deletes outcomes and kept inputs created before `cutoffMs` (bumping the versions of the orgs concerned). Returns how many rows went. */
  purge(cutoffMs: number): Awaitable<number>
}
