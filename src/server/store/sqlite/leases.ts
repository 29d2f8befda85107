/**
 * Instance leases and request holds of the SQLite store (docs/decisions.md "Instance leases"): the processes on one
 * file each renew a lease; a billed request's reservation is recorded as a hold of its process until its settlement
 * closes it; the holds of a process whose lease ended are refunded once, by whichever live process sweeps first.
 */
import type Database from 'better-sqlite3'
import type { CreditReservation, HoldRef, RequestClose } from '../../../accounts/types.js'
import type { InstanceLeases, LeaseRenewal } from '../contracts/store.js'
import type { SqliteCredits } from './credits.js'

interface HoldRow {
  id: string
  instance_id: string
  org_id: string
  from_sub: number
  from_pur: number
  period_start: number
}

/** The leases and holds, plus what the idempotency records need of them. */
export interface SqliteLeases {
  leases: InstanceLeases
  /**
   * What is left of `instanceId`'s lease at `nowMs` in ms; 0 when it has ended, after its lease and holds were
   * released (so a takeover of its requests never runs next to a settlement of theirs). Runs inside a transaction.
   */
  leaseLeft(instanceId: string, nowMs: number): number
}

function statements(db: Database.Database) {
  return {
    leaseOf: db.prepare('SELECT lease_until FROM instances WHERE id = ?'),
    upsertLease: db.prepare(
      'INSERT INTO instances (id, started_at, lease_until) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until',
    ),
    anyExpired: db.prepare(
      `SELECT EXISTS (SELECT 1 FROM instances WHERE lease_until <= ? AND id <> ?)
         OR EXISTS (SELECT 1 FROM credit_holds h WHERE NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = h.instance_id)) AS e`,
    ),
    expiredInstances: db.prepare('SELECT id FROM instances WHERE lease_until <= ?'),
    deleteInstance: db.prepare('DELETE FROM instances WHERE id = ?'),
    holdsOf: db.prepare('SELECT * FROM credit_holds WHERE instance_id = ?'),
    orphanHolds: db.prepare('SELECT * FROM credit_holds h WHERE NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = h.instance_id)'),
    holdById: db.prepare('SELECT * FROM credit_holds WHERE id = ?'),
    deleteHold: db.prepare('DELETE FROM credit_holds WHERE id = ?'),
    addHold: db.prepare(
      `INSERT INTO credit_holds (id, instance_id, org_id, from_sub, from_pur, period_start, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET from_sub = from_sub + excluded.from_sub, from_pur = from_pur + excluded.from_pur,
         period_start = excluded.period_start`,
    ),
    completeOwned: db.prepare('UPDATE idempotency SET status = ?, body = ? WHERE scope = ? AND idem_key = ? AND owner = ?'),
    ownsKey: db.prepare('SELECT 1 AS own FROM idempotency WHERE scope = ? AND idem_key = ? AND owner = ? AND status IS NULL'),
    forgetOwned: db.prepare('DELETE FROM idempotency WHERE scope = ? AND idem_key = ? AND owner = ? AND status IS NULL'),
  }
}

/**
 * The leases and holds over `credits` and the store's group commit; the credit steps run inside the transactions of
 * this module, as steps of them (`within`: no savepoint of their own).
 */
export function createSqliteLeases(db: Database.Database, all: Pick<SqliteCredits, 'within'>, group: <T>(write: () => T) => Promise<T>): SqliteLeases {
  const q = statements(db)
  const credits = all.within

  /** Deletes a hold and gives its credits back (inside a transaction). */
  const release = (h: HoldRow, nowMs: number) => {
    q.deleteHold.run(h.id)
    const amount = h.from_sub + h.from_pur
    if (amount > 0) credits.refundCredits(h.org_id, { amount, fromSubscription: h.from_sub, fromPurchased: h.from_pur, periodStart: h.period_start }, amount, nowMs)
  }
  /** Ends an instance's lease and releases its holds (inside a transaction). */
  const retire = (instanceId: string, nowMs: number): number => {
    q.deleteInstance.run(instanceId)
    const holds = q.holdsOf.all(instanceId) as HoldRow[]
    for (const h of holds) release(h, nowMs)
    return holds.length
  }

  const renewTx = db.transaction((instanceId: string, nowMs: number, leaseMs: number): LeaseRenewal => {
    const prev = q.leaseOf.get(instanceId) as { lease_until: number } | undefined
    q.upsertLease.run(instanceId, nowMs, nowMs + leaseMs)
    const expired = (q.anyExpired.get(nowMs, instanceId) as { e: number }).e === 1
    return { held: prev !== undefined && prev.lease_until > nowMs, expired }
  })

  const releaseExpiredTx = db.transaction((nowMs: number, instanceId: string | undefined): number => {
    const dead = instanceId !== undefined ? [instanceId] : (q.expiredInstances.all(nowMs) as Array<{ id: string }>).map((r) => r.id)
    let n = 0
    for (const id of dead) n += retire(id, nowMs)
    // holds whose instance row is gone (it was swept while its requests still ran)
    for (const h of q.orphanHolds.all() as HoldRow[]) {
      release(h, nowMs)
      n++
    }
    return n
  })

  const releaseHoldsTx = db.transaction((holdIds: readonly string[], nowMs: number): number => {
    let n = 0
    for (const id of holdIds) {
      const h = q.holdById.get(id) as HoldRow | undefined
      if (!h) continue
      release(h, nowMs)
      n++
    }
    return n
  })

  const reserveTx = db.transaction((orgId: string, amount: number, nowMs: number, hold: HoldRef): CreditReservation | null => {
    const r = credits.reserveCredits(orgId, amount, nowMs)
    if (r) q.addHold.run(hold.id, hold.instanceId, orgId, r.fromSubscription, r.fromPurchased, r.periodStart, nowMs)
    return r
  })

  const closeTx = db.transaction((orgId: string, close: RequestClose, nowMs: number): boolean => {
    const idem = close.idempotent
    // Its key taken over (this instance stalled past its lease, a retry ran on another): that run answers the key.
    // Nothing is counted; the hold, whole, is released by the lease's next renewal (the ledger marks it unsettled).
    if (idem && q.ownsKey.get(idem.scope, idem.key, idem.owner) === undefined) return false
    if (close.holdId !== undefined) {
      const h = q.holdById.get(close.holdId) as HoldRow | undefined
      if (!h) {
        // released meanwhile: nothing is counted; the key is free for a retry
        if (idem) q.forgetOwned.run(idem.scope, idem.key, idem.owner)
        return false
      }
      q.deleteHold.run(h.id)
      const { fromSubscription, fromPurchased } = close.refund
      const amount = fromSubscription + fromPurchased
      if (amount > 0) credits.refundCredits(orgId, { amount, fromSubscription, fromPurchased, periodStart: h.period_start }, amount, nowMs)
    }
    credits.settleCredits(orgId, close.lookups, nowMs, close.cacheWrites)
    if (idem?.status !== undefined && idem.body !== undefined) q.completeOwned.run(idem.status, idem.body, idem.scope, idem.key, idem.owner)
    else if (idem) q.forgetOwned.run(idem.scope, idem.key, idem.owner)
    return true
  })

  return {
    leases: {
      renewLease: (instanceId, nowMs, leaseMs) => renewTx.immediate(instanceId, nowMs, leaseMs),
      releaseExpired: (nowMs, instanceId) => releaseExpiredTx.immediate(nowMs, instanceId),
      releaseHolds: (holdIds, nowMs) => releaseHoldsTx.immediate(holdIds, nowMs),
      reserveHeld: (orgId, amount, nowMs, hold) => group(() => reserveTx(orgId, amount, nowMs, hold)),
      closeHeld: (orgId, close, nowMs) => group(() => closeTx(orgId, close, nowMs)),
    },
    leaseLeft(instanceId, nowMs) {
      const lease = q.leaseOf.get(instanceId) as { lease_until: number } | undefined
      if (lease && lease.lease_until > nowMs) return lease.lease_until - nowMs
      retire(instanceId, nowMs)
      return 0
    },
  }
}
