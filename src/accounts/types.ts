/**
 * The accounts of the service as stored: orgs with their plan and credits, API keys, credit reservations and the
 * credit events of the outbox, and the {@link AccountStore} that keeps them (extended by the server's store,
 * ../server/store/contracts/store.ts). The rules every implementation follows: docs/decisions.md, "Storage engines" → "rules
 * of every store". Methods may be synchronous (SQLite) or return promises; callers always `await`.
 */
import type { CacheEntry } from '../cache.js'
import type { EventPayload, EventType, PlanStatus, Scope } from '../schema.js'
import type { Plan } from './plans.js'

import type { Awaitable } from '../awaitable.js'

export type { Awaitable }

/** An organisation (team): owns keys, a plan and credits. */
export interface OrgRecord {
  id: string
  name: string
  planId: string
  /** Effective subscription credits per period (the plan's, or the org's override). */
  monthlyCredits: number
  /** Effective requests a second of each live key (the plan's, or the org's override). */
  ratePerSecond: number
  planStatus: PlanStatus
  suspended: boolean
  createdAt: number
  /** Current period [start, end) in unix ms. */
  periodStart: number
  periodEnd: number
  subscriptionCredits: number
  purchasedCredits: number
  usage: { periodLookups: number; periodCredits: number; totalLookups: number; totalCredits: number }
}

/** An API key as stored: never the key itself, only its keyed hash. */
export interface ApiKeyRecord {
  /** `key_` + the key's non-secret id part. */
  id: string
  orgId: string
  name: string
  mode: 'live' | 'test'
  scopes: Scope[]
  /** Hex HMAC-SHA256 of the whole secret key, keyed with the store's key-hash secret. */
  hash: string
  /** Last four characters of the secret key (to recognise it in lists). */
  last4: string
  createdAt: number
  revokedAt: number | null
  lastUsedAt: number | null
}

/** What authentication needs in one read: the key and the few org fields checked on every request. */
export interface AuthRecord {
  key: ApiKeyRecord
  org: {
    id: string
    suspended: boolean
    ratePerSecond: number
    /**
     * The version id of the org's own scoring policy (the server's org-policy store), null when it has none;
     * undefined when this store does not read it with the key (the server then asks the org-policy store).
     */
    policyVersion?: string | null
    /**
     * The org's balance (subscription + purchased) and period end as the auth read found them, when the store reads
     * them with the key: a request that reserves nothing (a cache hit) then reports `credits_remaining` without
     * another read, unless the period has ended since.
     */
    balance?: number
    periodEnd?: number
    /**
     * The version of the allow/block lists of the org in the key's mode (null: it never had one) when the store reads
     * it with the key; undefined otherwise (the server then asks the lists store).
     */
    listsVersion?: number | null
    /**
     * The version of the org's outcomes in the key's mode (null: it never had one) when the store reads it with the
     * key; undefined otherwise (the server then asks the outcome store).
     */
    outcomesVersion?: number | null
  }
}

/** Credits taken by one reservation, by bucket, so a refund gives them back where they came from. */
export interface CreditReservation {
  amount: number
  fromSubscription: number
  fromPurchased: number
  /** Period start when reserved: subscription credits of an ended period are not given back. */
  periodStart: number
  /** The org's balance right after the reservation, when the store knows it without another read. */
  balanceAfter?: number
}

/**
 * A result-cache entry a request writes when it ends, in the same write as its settlement (one transaction on SQLite,
 * one statement on PostgreSQL) rather than a write of its own.
 */
export interface CacheWrite {
  key: string
  entry: CacheEntry
  ttlMs: number
}

/** Why credits were added (the `reason` of credits.added). */
export type CreditReason = 'period_renewal' | 'upgrade' | 'top_up'

/** An event in the outbox. */
export interface StoredEvent {
  id: string
  orgId: string
  type: EventType
  /** Unix seconds. */
  created: number
  payload: EventPayload
}

/**
 * Plan change of an org: a catalogue plan plus optional per-org overrides (custom deals). A change states the whole
 * deal: an override left out (or null) means the plan's own value applies.
 */
export interface PlanChange {
  planId: string
  /** Monthly credits of this org instead of the plan's. */
  monthlyCredits?: number | null
  /** Requests a second of each live key of this org instead of the plan's. */
  ratePerSecond?: number | null
}

/** Where the accounts are kept: plans, orgs, keys, credits and the credit events. */
export interface AccountStore {
  /** The secret the API-key hashes are keyed with (generated on first start, kept in the store). */
  keyHashSecret(): Awaitable<string>

  // plans
  listPlans(): Awaitable<Plan[]>
  /** Inserts or updates plans (the catalogue of the running server). */
  upsertPlans(plans: readonly Plan[]): Awaitable<void>

  // orgs
  createOrg(input: { name: string; planId: string }, nowMs: number): Awaitable<OrgRecord>
  /** The org (after a due period roll-over), or null. */
  getOrg(orgId: string, nowMs: number): Awaitable<OrgRecord | null>
  listOrgs(nowMs: number): Awaitable<OrgRecord[]>
  /** Changes the plan and/or overrides; an increase of monthly credits grants the difference (credits.added, upgrade). */
  setOrgPlan(orgId: string, change: PlanChange, nowMs: number): Awaitable<OrgRecord | null>
  setOrgSuspended(orgId: string, suspended: boolean, nowMs: number): Awaitable<OrgRecord | null>

  // keys
  insertKey(key: ApiKeyRecord): Awaitable<void>
  /** The key and its org's auth fields (revoked keys included; the caller rejects them), or null. */
  getAuth(keyId: string): Awaitable<AuthRecord | null>
  getKey(keyId: string): Awaitable<ApiKeyRecord | null>
  listKeys(orgId: string): Awaitable<ApiKeyRecord[]>
  /** Revokes a key; effective for the next request. Returns the key, or null when there is none. */
  revokeKey(keyId: string, nowMs: number): Awaitable<ApiKeyRecord | null>
  setKeyScopes(keyId: string, scopes: Scope[]): Awaitable<ApiKeyRecord | null>
  /** Records use of a key (implementations may skip writes closer than a minute apart). */
  touchKey(keyId: string, nowMs: number): Awaitable<void>

  // credits
  /** Takes `amount` credits (subscription first) if the balance covers them; null (nothing taken) otherwise. */
  reserveCredits(orgId: string, amount: number, nowMs: number): Awaitable<CreditReservation | null>
    /**
   * Gives back `amount` of a reservation (purchased part first, then subscription unless its period ended). Returns
   * the org's balance after it when the store knows it without another read.
   */
  refundCredits(orgId: string, reservation: CreditReservation, amount: number, nowMs: number): Awaitable<number | void>
  /** subscription + purchased now (after a due roll-over). */
  balance(orgId: string, nowMs: number): Awaitable<number>
  /**
   * Ends a request: counts `lookups` into the usage, emits the credit alerts the balance now calls for and stores the
   * request's result-cache entries (`cacheWrites`, in the same write).
   */
  settleCredits(orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]): Awaitable<void>
  /** Adds purchased credits (credits.added). Returns the org, or null when there is none. */
  addCredits(orgId: string, amount: number, reason: CreditReason, nowMs: number): Awaitable<OrgRecord | null>

  // events (outbox)
  /** Events of an org (or of all orgs), oldest first, after the event id `afterId` when given. */
  listEvents(query: { orgId?: string; afterId?: string; limit?: number }): Awaitable<StoredEvent[]>

  /**
   * Optional: the writes of a request's hot path as promises that share one database transaction with those of the
   * other requests arriving at the same moment (group commit: one commit for many requests, each still answered only
   * after its write committed). The server's per-request ledger uses them when present.
   */
  readonly grouped?: Pick<AccountStore, 'reserveCredits' | 'refundCredits' | 'settleCredits'>
}

/** A request's hold: the credits its reservations took, recorded under its instance until the request ends. */
export interface HoldRef {
  /** The hold's id, unique among all instances'. */
  id: string
  /** The instance the request runs on. */
  instanceId: string
}

/** What ends a request on the ledger, in one write (the settlement of {@link HeldCredits.closeHeld}). */
export interface RequestClose {
  /** The request's hold; absent when it reserved nothing. */
  holdId?: string
  /** Lookups counted into the usage. */
  lookups: number
  /** What of the hold is given back, by bucket; the rest is spent. */
  refund: { fromSubscription: number; fromPurchased: number }
  /** Result-cache entries stored with it. */
  cacheWrites?: readonly CacheWrite[]
  /**
   * The request's idempotency record, written with it while `owner` still owns it: completed when `status` and
   * `body` are given (the answer to replay), else forgotten.
   */
  idempotent?: { scope: string; key: string; owner: string; status?: number; body?: string }
}

/**
 * Credits held per request (the server's stores: ../server/store/contracts/store.ts `InstanceLeases`): a reservation recorded
 * as a hold of the request's instance, closed by the request's settlement — or, when its instance dies first,
 * released (refunded) by another instance.
 */
export interface HeldCredits {
  /** The reservation of {@link AccountStore.reserveCredits}, recording the credits taken in the hold (one write). */
  reserveHeld(orgId: string, amount: number, nowMs: number, hold: HoldRef): Awaitable<CreditReservation | null>
  /**
   * Ends a request: gives back the unused part of its hold, counts its lookups, stores its cache entries and its
   * idempotent answer, and closes the hold — one write. False when the hold was released meanwhile (its instance was
   * taken for dead and another refunded it): nothing is counted or cached, the idempotency record is only forgotten,
   * and the request must not be answered as charged. False too when another instance took its idempotency record over
   * (docs/decisions.md "Instance leases" → "takeover"): the hold is left for its instance to release.
   */
  closeHeld(orgId: string, close: RequestClose, nowMs: number): Awaitable<boolean>
  /**
   * True when a reservation is a round trip to a database server (PostgreSQL): a lookup whose reservation is all but
   * sure then starts while it is on its way (`CreditLedger.covers`). Absent (SQLite, written in the group commit of
   * the request's own turn): there is no round trip to overlap, and the lookup starts once its reservation is written.
   */
  readonly remote?: boolean
}
