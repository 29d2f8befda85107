/**
 * The auth read of the PostgreSQL store (a key with its org's state and versions), one statement per turn for the
 * requests arriving together — or none of its own: when a reservation or a close is about to go out, the reads ride
 * on that statement as a read-only part of it (docs/decisions.md "PostgreSQL store" → "statements per turn").
 */
import type pg from 'pg'
import type { AuthRecord } from '../../../accounts/types.js'
import { toKey, type KeyRow } from '../common/record-rows.js'
import type { Num } from './client.js'
import { perTurn, type Ride } from './per-turn.js'

/** The auth rows of the key ids in parameter `$p` (an array). */
export const authSelect = (p: number): string => `SELECT k.*, o.suspended AS org_suspended, o.rate_per_second AS org_rate, p.version AS org_policy,
  o.subscription_credits + o.purchased_credits AS org_balance, o.period_end AS org_period_end, v.version AS lists_version,
  ov.version AS outcomes_version
FROM api_keys k JOIN orgs o ON o.id = k.org_id LEFT JOIN org_policies p ON p.org_id = k.org_id
  LEFT JOIN list_versions v ON v.org_id = k.org_id AND v.mode = k.mode
  LEFT JOIN outcome_versions ov ON ov.org_id = k.org_id AND ov.mode = k.mode WHERE k.id = ANY($${p}::text[])`

/** A row of {@link authSelect} (its numbers as strings, or as numbers when read through `row_to_json`). */
export type AuthRow = KeyRow & { org_suspended: boolean; org_rate: number; org_policy: string | null; org_balance: Num; org_period_end: Num; lists_version: Num | null; outcomes_version: Num | null }

/** The records of `keyIds`, in order, from the rows read for them (null: no such key). */
export function authRecords(keyIds: readonly string[], rows: readonly AuthRow[]): Array<AuthRecord | null> {
  const byId = new Map(rows.map((r) => [r.id, r]))
  return keyIds.map((id) => {
    const r = byId.get(id)
    if (!r) return null
    // a record of its own per caller: the server keeps per-request state next to it
    return {
      key: toKey(r),
      org: {
        id: r.org_id,
        suspended: r.org_suspended,
        ratePerSecond: Number(r.org_rate),
        policyVersion: r.org_policy,
        balance: Number(r.org_balance),
        periodEnd: Number(r.org_period_end),
        listsVersion: r.lists_version === null ? null : Number(r.lists_version),
        outcomesVersion: r.outcomes_version === null ? null : Number(r.outcomes_version),
      },
    }
  })
}

/** Auth reads waiting to ride on a reservation or a close. */
export interface AuthRiders {
  /** The reads a statement takes along: their key ids (its parameter), then their rows or its failure. */
  take(): (Omit<Ride<string, AuthRecord | null>, 'answer'> & { answer(rows: readonly AuthRow[]): void }) | null
  /** A statement that can carry reads: `queued` says whether one is queued and not yet sent. */
  carrier(queued: () => boolean): void
}

/** The auth reads over `pool`: `read` for a request, `riders` for the statements that carry them. */
export function createAuthReads(pool: pg.Pool): { read: (keyId: string) => Promise<AuthRecord | null>; riders: AuthRiders } {
  const read = perTurn(
    async (keyIds: string[]): Promise<Array<AuthRecord | null>> => {
      const { rows } = await pool.query<AuthRow>({ name: 'riskcheck_auth_many', text: authSelect(1), values: [[...new Set(keyIds)]] })
      return authRecords(keyIds, rows)
    },
    { gate: pool },
  )
  return {
    read,
    riders: {
      take() {
        const ride = read.ride()
        if (!ride) return null
        return { args: [...new Set(ride.args)], answer: (rows) => ride.answer(authRecords(ride.args, rows)), fail: ride.fail }
      },
      carrier: read.carrier,
    },
  }
}
