/**
 * The in-memory store: the whole {@link Store} in maps, synchronous, gone when the process ends. It is for an
 * application that embeds `createServer` in its own unit tests (no file to clean up, no database to start) and a
 * third engine for the store contract suites. Bulk jobs and webhooks run over it too (./memory-bulk.ts,
 * ./memory-deliveries.ts, on {@link MemoryStoreInternals}). Its rules come from the same pure functions as the SQLite
 * and PostgreSQL stores (../../accounts/ledger.ts: buckets, roll-over, plan changes, alerts); every operation runs to its end
 * without yielding, so concurrent requests in one process can never overspend a balance or run an idempotent request
 * twice.
 * Nothing is shared between processes: a server of several instances needs PostgreSQL.
 */
import { randomBytes } from 'node:crypto'
import type { CacheEntry, ResultCache } from '../../cache.js'
import type { EventPayload, PlanStatus } from '../../schema.js'
import {
  alertLevelOf,
  buildEvent,
  creditsAddedEvent,
  dueAlerts,
  periodAt,
  planChangeOf,
  refundSplit,
  renewal,
  reserveSplit,
  type AlertLevel,
  type PendingEvent,
} from '../../accounts/ledger.js'
import { DEFAULT_PLANS, validatePlans, type Plan } from '../../accounts/plans.js'
import { createMemoryOrgPolicyStore, type OrgPolicyStore } from './sqlite/org-policies.js'
import type {
  ApiKeyRecord,
  CacheWrite,
  CreditReason,
  CreditReservation,
  OrgRecord,
  PlanChange,
  StoredEvent,
} from '../../accounts/types.js'
import type { IdempotencyBegin, Store, Synchronous } from './contracts/store.js'
import { IDEMPOTENCY_STALE_MS } from './shared/lease-times.js'

/** The in-memory store. */
export interface MemoryStore extends Synchronous<Store> {
  /**
   * Per-org scoring policies and answer logs, kept with the store as the SQLite store keeps them in its file: the auth
   * read takes an org's policy version from here, and `createServer` uses them unless given `orgPolicies`.
   */
  readonly orgPolicies: Synchronous<OrgPolicyStore>
}

/**
 * What the bulk and webhook storage over a memory store (./memory-bulk.ts, ./memory-deliveries.ts) needs beyond the
 * {@link Store}; not part of the package's API ({@link memoryStoreInternals} finds it).
 */
export interface MemoryStoreInternals {
  /**
   * Runs `fn` as one transaction: when it throws, the orgs (credits, usage, alert level, period) and the outbox are
   * put back as they were, and the steps given to {@link onRollback} meanwhile run, newest first. Nested calls join
   * the running transaction. `fn` must be synchronous.
   */
  transaction<T>(fn: () => T): T
  /** Registers a step that undoes a write of the running transaction (nothing outside one). */
  onRollback(step: () => void): void
  /** The event outbox of the store (`listEvents`): where bulk.completed and ping events go, and what the pump reads. */
  readonly outbox: {
    insert(event: EventPayload): void
    after(afterSeq: number, limit: number): Array<{ seq: number; payload: string }>
  }
  /**
   * An org's state, changed in place: for tests that need a state the Store does not write (credits set outright, a
   * period that has ended).
   */
  orgState(orgId: string): { subscriptionCredits: number; purchasedCredits: number; monthlyCredits: number; periodEnd: number } | undefined
}

const internalsOf = new WeakMap<object, MemoryStoreInternals>()

/** The internals of `store` when it is a memory store (made by {@link createMemoryStore}), else undefined. */
export function memoryStoreInternals(store: object): MemoryStoreInternals | undefined {
  return internalsOf.get(store)
}

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** The plan catalogue it starts with (default: the default plans); `createServer({ plans })` replaces it anyway. */
  plans?: readonly Plan[]
}

/** An org as kept: its record's fields plus what only the store needs (overrides, period anchor, alert level). */
interface OrgState {
  id: string
  name: string
  planId: string
  monthlyOverride: number | null
  rateOverride: number | null
  monthlyCredits: number
  ratePerSecond: number
  planStatus: PlanStatus
  suspended: boolean
  createdAt: number
  periodAnchor: number
  periodStart: number
  periodEnd: number
  subscriptionCredits: number
  purchasedCredits: number
  alertLevel: AlertLevel
  periodLookups: number
  periodCredits: number
  totalLookups: number
  totalCredits: number
}

interface IdempotencyRecord {
  fingerprint: string
  status: number | null
  body: string | null
  createdAt: number
  expiresAt: number
}

/** Values are kept as JSON, as the databases keep them: what a caller does to an answer never changes the store. */
interface CachedValue {
  value: string
  storedAt: number
  expiresAt: number
}

const toOrg = (o: OrgState): OrgRecord => ({
  id: o.id,
  name: o.name,
  planId: o.planId,
  monthlyCredits: o.monthlyCredits,
  ratePerSecond: o.ratePerSecond,
  planStatus: o.planStatus,
  suspended: o.suspended,
  createdAt: o.createdAt,
  periodStart: o.periodStart,
  periodEnd: o.periodEnd,
  subscriptionCredits: o.subscriptionCredits,
  purchasedCredits: o.purchasedCredits,
  usage: { periodLookups: o.periodLookups, periodCredits: o.periodCredits, totalLookups: o.totalLookups, totalCredits: o.totalCredits },
})

const copyKey = (k: ApiKeyRecord): ApiKeyRecord => ({ ...k, scopes: [...k.scopes] })

const byCreation = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }) =>
  a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** Plans in catalogue order: the position of their last upsert, then id (as the databases order them). */
function planCatalogue(initial: readonly Plan[]) {
  const plans = new Map<string, { plan: Plan; position: number }>()
  const upsert = (list: readonly Plan[]) => list.forEach((p, position) => plans.set(p.id, { plan: { ...p }, position }))
  upsert(initial)
  return {
    upsert,
    get: (id: string): Plan | undefined => plans.get(id)?.plan,
    list: (): Plan[] =>
      [...plans.values()].sort((a, b) => a.position - b.position || (a.plan.id < b.plan.id ? -1 : 1)).map((e) => ({ ...e.plan })),
  }
}

/**
 * The event outbox: events in the order written, found by id for paging. An event's position + 1 is its sequence
 * number, which the webhook pump's cursor counts in (as it counts the `seq` of the databases' `events` table).
 */
function eventOutbox() {
  const events: Array<Omit<StoredEvent, 'payload'> & { payload: string }> = []
  const seq = new Map<string, number>()
  const insert = (payload: EventPayload) => {
    if (seq.has(payload.id)) return
    seq.set(payload.id, events.length)
    events.push({ id: payload.id, orgId: payload.org_id, type: payload.type, created: payload.created, payload: JSON.stringify(payload) })
  }
  return {
    emit(orgId: string, pending: PendingEvent[], nowMs: number) {
      for (const e of pending) insert(buildEvent(orgId, e, nowMs))
    },
    /** Writes an event built elsewhere (bulk.completed, ping); a repeated id is ignored, as the databases ignore it. */
    insert,
    /** Events after sequence number `afterSeq`, oldest first: what the webhook pump fans out. */
    after(afterSeq: number, limit: number): Array<{ seq: number; payload: string }> {
      return events.slice(afterSeq, afterSeq + limit).map((e, i) => ({ seq: afterSeq + i + 1, payload: e.payload }))
    },
    get length() {
      return events.length
    },
    /** Drops the events written after the first `length` (a transaction rolled back). */
    truncate(length: number) {
      for (const e of events.splice(length)) seq.delete(e.id)
    },
    list({ orgId, afterId, limit = 100 }: { orgId?: string; afterId?: string; limit?: number }): StoredEvent[] {
      // An unknown id pages from the start, as the databases do.
      const from = afterId === undefined ? 0 : (seq.get(afterId) ?? -1) + 1
      const out: StoredEvent[] = []
      for (let i = from; i < events.length && out.length < limit; i++) {
        const e = events[i]!
        if (orgId === undefined || e.orgId === orgId) out.push({ ...e, payload: JSON.parse(e.payload) as EventPayload })
      }
      return out
    },
  }
}

/**
 * Transactions over the orgs and the outbox, for the bulk and webhook storage (./memory-bulk.ts), whose job writes
 * and credit operations must commit or fail together as they do in a database: a transaction remembers each org as
 * it was before it first changed it, and how long the outbox was, and puts both back when it throws.
 */
function transactions(outbox: ReturnType<typeof eventOutbox>) {
  let journal: { orgs: Map<OrgState, OrgState>; outboxLength: number; undo: Array<() => void> } | null = null
  return {
    /** Called before an org is changed: keeps its state for a rollback of the running transaction. */
    touch(o: OrgState) {
      if (journal && !journal.orgs.has(o)) journal.orgs.set(o, { ...o })
    },
    onRollback(step: () => void) {
      journal?.undo.push(step)
    },
    run<T>(fn: () => T): T {
      if (journal) return fn() // nested: a part of the running transaction
      const j = (journal = { orgs: new Map<OrgState, OrgState>(), outboxLength: outbox.length, undo: [] as Array<() => void> })
      try {
        const out = fn()
        // Nothing may run between its writes and its commit: the others would see them, or add theirs to its undo.
        if (out instanceof Promise) throw new TypeError('riskcheck store: a memory store transaction must be synchronous')
        return out
      } catch (e) {
        for (const step of j.undo.reverse()) step()
        for (const [o, before] of j.orgs) Object.assign(o, before)
        outbox.truncate(j.outboxLength)
        throw e
      } finally {
        journal = null
      }
    },
  }
}

/** Plans, orgs, their keys, credits and events: the account and ledger half of the store. */
function accounts(initialPlans: readonly Plan[], policies: Synchronous<OrgPolicyStore>) {
  const plans = planCatalogue(initialPlans)
  const orgs = new Map<string, OrgState>()
  const outbox = eventOutbox()
  const tx = transactions(outbox)

  /** The org, its period renewed first when it has ended (the lazy roll-over every read and credit operation does). */
  const load = (orgId: string, nowMs: number): OrgState | null => {
    const o = orgs.get(orgId)
    if (!o) return null
    tx.touch(o)
    if (nowMs >= o.periodEnd) {
      const r = renewal(o.periodAnchor, o.monthlyCredits, o.purchasedCredits, nowMs)
      o.periodStart = r.start
      o.periodEnd = r.end
      o.subscriptionCredits = o.monthlyCredits
      o.periodLookups = 0
      o.periodCredits = 0
      o.alertLevel = r.alertLevel
      if (r.granted > 0) outbox.emit(orgId, [creditsAddedEvent(r.granted, r.balance, 'period_renewal')], nowMs)
    }
    return o
  }
  const readOrg = (orgId: string, nowMs: number): OrgRecord | null => {
    const o = load(orgId, nowMs)
    return o ? toOrg(o) : null
  }
  const planOf = (id: string): Plan => {
    const plan = plans.get(id)
    if (!plan) throw new RangeError(`unknown plan ${id}`)
    return plan
  }

  return {
    listPlans: plans.list,
    upsertPlans: plans.upsert,
    createOrg(input: { name: string; planId: string }, nowMs: number): OrgRecord {
      const plan = planOf(input.planId)
      const id = `org_${randomBytes(8).toString('hex')}`
      const { start, end } = periodAt(nowMs, nowMs)
      const o: OrgState = {
        id,
        name: input.name,
        planId: plan.id,
        monthlyOverride: null,
        rateOverride: null,
        monthlyCredits: plan.monthly_credits,
        ratePerSecond: plan.rate_per_second,
        planStatus: 'active',
        suspended: false,
        createdAt: nowMs,
        periodAnchor: nowMs,
        periodStart: start,
        periodEnd: end,
        subscriptionCredits: plan.monthly_credits,
        purchasedCredits: 0,
        alertLevel: 0,
        periodLookups: 0,
        periodCredits: 0,
        totalLookups: 0,
        totalCredits: 0,
      }
      orgs.set(id, o)
      return toOrg(o)
    },
    getOrg: readOrg,
    listOrgs: (nowMs: number) => [...orgs.values()].sort(byCreation).map((o) => readOrg(o.id, nowMs)!),
    setOrgPlan(orgId: string, change: PlanChange, nowMs: number) {
      const o = load(orgId, nowMs)
      if (!o) return null
      const plan = planOf(change.planId)
      const { granted, balance, ...fields } = planChangeOf(o, plan, change)
      // Every field of the change is a field of the org (checked by the type).
      const next: Pick<OrgState, 'planId' | keyof typeof fields> = { planId: plan.id, ...fields }
      Object.assign(o, next)
      if (granted > 0) outbox.emit(orgId, [creditsAddedEvent(granted, balance, 'upgrade')], nowMs)
      return toOrg(o)
    },
    setOrgSuspended(orgId: string, suspended: boolean, nowMs: number) {
      const o = orgs.get(orgId)
      if (!o) return null
      o.suspended = suspended
      o.planStatus = suspended ? 'suspended' : 'active'
      return readOrg(orgId, nowMs)
    },
    ...apiKeys(orgs, policies),
    ...credits(load, outbox),
    listEvents: outbox.list,
    internals: { transaction: tx.run, onRollback: tx.onRollback, outbox, orgState: (orgId: string) => orgs.get(orgId) },
  }
}

/** API keys: kept with their org, handed out as copies. */
function apiKeys(orgs: ReadonlyMap<string, OrgState>, policies: Synchronous<OrgPolicyStore>) {
  const keys = new Map<string, ApiKeyRecord>()
  const keyOrNull = (keyId: string) => {
    const k = keys.get(keyId)
    return k ? copyKey(k) : null
  }
  return {
    insertKey(k: ApiKeyRecord) {
      if (!orgs.has(k.orgId)) throw new Error(`riskcheck store: foreign key: no org ${k.orgId} for key ${k.id}`)
      if (keys.has(k.id)) throw new Error(`riskcheck store: unique: a key ${k.id} exists already`)
      keys.set(k.id, copyKey(k))
    },
    getAuth(keyId: string) {
      const k = keys.get(keyId)
      const o = k && orgs.get(k.orgId)
      if (!k || !o) return null
      return {
        key: copyKey(k),
        org: {
          id: o.id,
          suspended: o.suspended,
          ratePerSecond: o.ratePerSecond,
          policyVersion: policies.getOrgPolicyVersion(o.id),
          balance: o.subscriptionCredits + o.purchasedCredits,
          periodEnd: o.periodEnd,
        },
      }
    },
    getKey: keyOrNull,
    listKeys: (orgId: string) => [...keys.values()].filter((k) => k.orgId === orgId).sort(byCreation).map(copyKey),
    revokeKey(keyId: string, nowMs: number) {
      const k = keys.get(keyId)
      if (k) k.revokedAt ??= nowMs
      return keyOrNull(keyId)
    },
    setKeyScopes(keyId: string, scopes: ApiKeyRecord['scopes']) {
      const k = keys.get(keyId)
      if (k) k.scopes = [...scopes]
      return keyOrNull(keyId)
    },
    touchKey(keyId: string, nowMs: number) {
      const k = keys.get(keyId)
      // Writes closer than a minute apart are skipped, as the databases skip them.
      if (k && (k.lastUsedAt === null || k.lastUsedAt < nowMs - 60_000)) k.lastUsedAt = nowMs
    },
  }
}

/** Credits of an org (../../accounts/ledger.ts rules), over `load`: the org with its period renewed when due. */
function credits(load: (orgId: string, nowMs: number) => OrgState | null, outbox: ReturnType<typeof eventOutbox>) {
  return {
    reserveCredits(orgId: string, amount: number, nowMs: number) {
      const o = load(orgId, nowMs)
      const split = o && reserveSplit(o.subscriptionCredits, o.purchasedCredits, amount)
      if (!o || !split) return null
      o.subscriptionCredits -= split.fromSubscription
      o.purchasedCredits -= split.fromPurchased
      o.periodCredits += amount
      o.totalCredits += amount
      return { amount, ...split, periodStart: o.periodStart, balanceAfter: o.subscriptionCredits + o.purchasedCredits }
    },
    refundCredits(orgId: string, reservation: CreditReservation, amount: number, nowMs: number) {
      const o = load(orgId, nowMs)
      if (!o) return
      const { fromPurchased, fromSubscription } = refundSplit(reservation, amount)
      // Subscription credits of an ended period lapsed with it: only the purchased part goes back then.
      const samePeriod = o.periodStart === reservation.periodStart
      o.subscriptionCredits += samePeriod ? fromSubscription : 0
      o.purchasedCredits += fromPurchased
      o.periodCredits = Math.max(0, o.periodCredits - (samePeriod ? fromPurchased + fromSubscription : 0))
      o.totalCredits = Math.max(0, o.totalCredits - (fromPurchased + fromSubscription))
      return o.subscriptionCredits + o.purchasedCredits
    },
    balance(orgId: string, nowMs: number) {
      const o = load(orgId, nowMs)
      return o ? o.subscriptionCredits + o.purchasedCredits : 0
    },
    settleCredits(orgId: string, lookups: number, nowMs: number) {
      const o = load(orgId, nowMs)
      if (!o) return
      o.periodLookups += lookups
      o.totalLookups += lookups
      const due = dueAlerts(o.subscriptionCredits + o.purchasedCredits, o.monthlyCredits, o.alertLevel)
      o.alertLevel = due.level
      outbox.emit(orgId, due.events, nowMs)
    },
    addCredits(orgId: string, amount: number, reason: CreditReason, nowMs: number) {
      const o = load(orgId, nowMs)
      if (!o) return null
      o.purchasedCredits += amount
      const balance = o.subscriptionCredits + o.purchasedCredits
      o.alertLevel = alertLevelOf(balance, o.monthlyCredits)
      outbox.emit(orgId, [creditsAddedEvent(amount, balance, reason)], nowMs)
      return toOrg(o)
    },
  }
}

/** Idempotency records and the result cache, both expiring: the requests half of the store. */
function requests() {
  const idempotency = new Map<string, IdempotencyRecord>()
  const cache = new Map<string, CachedValue>()
  // A separator no scope contains (scopes are a key id, a method and a path).
  const idOf = (scope: string, key: string) => `${scope}\u0000${key}`

  const resultCache: ResultCache = {
    get(key, nowMs) {
      const e = cache.get(key)
      if (!e || e.expiresAt <= nowMs) return undefined
      return { outcome: JSON.parse(e.value) as CacheEntry['outcome'], storedAt: e.storedAt }
    },
    set(key, entry, ttlMs) {
      cache.set(key, { value: JSON.stringify(entry.outcome), storedAt: entry.storedAt, expiresAt: entry.storedAt + ttlMs })
    },
    clear() {
      cache.clear()
    },
    // The store owns the entries; closing the riskcheck instance must not drop them.
    close() {},
  }

  const purge = <V extends { expiresAt: number }>(map: Map<string, V>, nowMs: number) => {
    let n = 0
    for (const [k, v] of map) if (v.expiresAt <= nowMs && map.delete(k)) n++
    return n
  }

  return {
    resultCache,
    beginIdempotent(scope: string, key: string, fingerprint: string, nowMs: number, ttlMs: number): IdempotencyBegin {
      const id = idOf(scope, key)
      const r = idempotency.get(id)
      if (!r || r.expiresAt <= nowMs) {
        idempotency.set(id, { fingerprint, status: null, body: null, createdAt: nowMs, expiresAt: nowMs + ttlMs })
        return { state: 'new' }
      }
      if (r.fingerprint !== fingerprint) return { state: 'mismatch' }
      if (r.status !== null && r.body !== null) return { state: 'replay', status: r.status, body: r.body }
      // No request runs this long: the one that started this record was interrupted; the retry takes it over.
      if (nowMs - r.createdAt < IDEMPOTENCY_STALE_MS) return { state: 'in_progress' }
      r.createdAt = nowMs
      r.expiresAt = nowMs + ttlMs
      return { state: 'new' }
    },
    completeIdempotent(scope: string, key: string, status: number, body: string) {
      const r = idempotency.get(idOf(scope, key))
      if (r) {
        r.status = status
        r.body = body
      }
    },
    abandonIdempotent(scope: string, key: string) {
      const id = idOf(scope, key)
      if (idempotency.get(id)?.status === null) idempotency.delete(id)
    },
    purgeExpired: (nowMs: number) => purge(cache, nowMs) + purge(idempotency, nowMs),
  }
}

/** Every method of `methods`, refusing to run once `isOpen` says the store is closed (as a closed database refuses). */
function whileOpen<T extends object>(methods: T, isOpen: () => boolean): T {
  const guarded = Object.entries(methods).map(([name, value]) => {
    if (typeof value !== 'function') return [name, value]
    return [
      name,
      (...args: unknown[]) => {
        if (!isOpen()) throw new Error('riskcheck store: the memory store is closed')
        return (value as (...a: unknown[]) => unknown)(...args)
      },
    ]
  })
  return Object.fromEntries(guarded) as T
}

/**
 * Creates an empty in-memory store: the default plan catalogue (or `plans`), a random key-hash secret, no orgs.
 *
 * @example
 * import { createMemoryStore, createServer } from 'riskcheck/server'
 * const store = createMemoryStore()
 * const app = createServer({ db: store, riskcheck: { offline: true } })
 * const org = store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const plans = options.plans === undefined ? DEFAULT_PLANS : validatePlans(options.plans)
  const secret = randomBytes(32).toString('hex')
  const orgPolicies = createMemoryOrgPolicyStore()
  const { resultCache, ...idempotency } = requests()
  let closed = false
  const isOpen = () => !closed
  const { close: closeCache, ...cacheMethods } = resultCache
  const { internals, ...account } = accounts(plans, orgPolicies)
  const settleCredits = (orgId: string, lookups: number, nowMs: number, cacheWrites?: readonly CacheWrite[]) => {
    for (const w of cacheWrites ?? []) resultCache.set(w.key, w.entry, w.ttlMs)
    account.settleCredits(orgId, lookups, nowMs)
  }
  const store: MemoryStore = {
    ...whileOpen(
      {
        keyHashSecret: () => secret,
        ...account,
        settleCredits,
        ...idempotency,
        // Nothing to migrate: the layout is this code's own, always current.
        probe: () => ({ schemaVersion: 0, expectedVersion: 0 }),
      },
      isOpen,
    ),
    resultCache: { ...whileOpen(cacheMethods, isOpen), close: closeCache },
    orgPolicies,
    close() {
      closed = true
    },
  }
  internalsOf.set(store, internals)
  return store
}
