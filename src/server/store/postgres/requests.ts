/**
 * Idempotency records and the persistent result cache of the PostgreSQL store, one statement each. Starting an
 * idempotent request is an upsert that only takes a record over when it is expired, or in progress with an owner
 * whose lease was released (./leases.ts) — or, without an owner, stale ({@link IDEMPOTENCY_STALE_MS}) — read
 * together with the record as it was, so the answer — new, replay, mismatch, in progress — costs one round trip
 * and two processes given the same key at once never both run it.
 */
import type pg from 'pg'
import type { CacheEntry, ResultCache } from '../../../cache.js'
import { perTurn } from './per-turn.js'
import { IDEMPOTENCY_STALE_MS } from '../common/lease-times.js'
import { type IdempotencyBegin } from '../contracts/store.js'
import type { Num } from './client.js'

const BEGIN = {
  name: 'riskcheck_idempotency_begin',
  text: `WITH taken AS (
  INSERT INTO idempotency (scope, idem_key, fingerprint, status, body, created_at, expires_at, owner)
  VALUES ($1, $2, $3, NULL, NULL, $4::bigint, $5::bigint, $7)
  ON CONFLICT (scope, idem_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = NULL, body = NULL,
    created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at, owner = EXCLUDED.owner
  WHERE idempotency.expires_at <= EXCLUDED.created_at
     OR (idempotency.fingerprint = EXCLUDED.fingerprint AND (idempotency.status IS NULL OR idempotency.body IS NULL)
         AND CASE WHEN idempotency.owner IS NULL THEN EXCLUDED.created_at - idempotency.created_at >= $6::bigint
                  ELSE NOT EXISTS (SELECT 1 FROM instances WHERE id = idempotency.owner) END)
  RETURNING 1
)
SELECT (SELECT COUNT(*) FROM taken)::int AS taken, e.fingerprint, e.status, e.body, e.expires_at, e.owner,
  (SELECT lease_until FROM instances WHERE id = e.owner) AS owner_lease
FROM (SELECT 1) AS one LEFT JOIN idempotency e ON e.scope = $1 AND e.idem_key = $2`,
}

interface BeginRow {
  taken: number
  fingerprint: string | null
  status: number | null
  body: string | null
  expires_at: Num | null
  owner: string | null
  owner_lease: Num | null
}

/**
 * The answer of a begin statement; undefined when the record changed between the statement's snapshot and its
 * upsert (another process replaced it at that instant), and 'release' when its owner's lease has run out but was not
 * released yet: the statement is then run again (after the release).
 */
function beginAnswer(r: BeginRow, fingerprint: string, nowMs: number): IdempotencyBegin | 'release' | undefined {
  if (r.taken === 1) return { state: 'new' }
  if (r.fingerprint === null || Number(r.expires_at) <= nowMs) return undefined
  if (r.fingerprint !== fingerprint) return { state: 'mismatch' }
  if (r.status !== null && r.body !== null) return { state: 'replay', status: r.status, body: r.body }
  if (r.owner === null) return { state: 'in_progress' }
  if (r.owner_lease === null) return undefined
  const left = Number(r.owner_lease) - nowMs
  return left > 0 ? { state: 'in_progress', retryAfterMs: left } : 'release'
}

/** The idempotency and cache operations over a pool. */
/**
 * The idempotency and cache operations over a pool; `releaseExpired` (./leases.ts) releases the instances whose lease
 * ran out before a takeover of their records, so a takeover never runs next to a settlement of the request it repeats.
 */
export function createPostgresRequests(pool: pg.Pool, releaseExpired: (nowMs: number) => Promise<unknown>) {
  // The cache reads of requests arriving together: one statement (./per-turn.ts); each checks its own expiry time.
  const readEntry = perTurn(async (asks: Array<{ key: string; nowMs: number }>): Promise<Array<CacheEntry | undefined>> => {
    const { rows } = await pool.query<{ key: string; value: string; stored_at: Num; expires_at: Num }>({
      name: 'riskcheck_cache_get_many',
      text: 'SELECT key, value, stored_at, expires_at FROM result_cache WHERE key = ANY($1::text[]) AND expires_at > $2::bigint',
      values: [[...new Set(asks.map((a) => a.key))], Math.min(...asks.map((a) => a.nowMs))],
    })
    const byKey = new Map(rows.map((r) => [r.key, r]))
    return asks.map(({ key, nowMs }) => {
      const r = byKey.get(key)
      if (!r || Number(r.expires_at) <= nowMs) return undefined
      try {
        return { outcome: JSON.parse(r.value) as CacheEntry['outcome'], storedAt: Number(r.stored_at) }
      } catch {
        return undefined
      }
    })
  }, { gate: pool })
  const resultCache: ResultCache = {
    get: (key, nowMs) => readEntry({ key, nowMs }),
    async set(key, entry, ttlMs) {
      await pool.query({
        name: 'riskcheck_cache_set',
        text: `INSERT INTO result_cache (key, value, stored_at, expires_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, stored_at = EXCLUDED.stored_at, expires_at = EXCLUDED.expires_at`,
        values: [key, JSON.stringify(entry.outcome), entry.storedAt, entry.storedAt + ttlMs],
      })
    },
    async clear() {
      await pool.query('DELETE FROM result_cache')
    },
    // The store owns the pool; closing the riskcheck instance must not close it.
    close() {},
  }

  return {
    resultCache,
    async beginIdempotent(scope: string, key: string, fingerprint: string, nowMs: number, ttlMs: number, owner?: string): Promise<IdempotencyBegin> {
      for (let tries = 0; ; tries++) {
        const { rows } = await pool.query<BeginRow>({ ...BEGIN, values: [scope, key, fingerprint, nowMs, nowMs + ttlMs, IDEMPOTENCY_STALE_MS, owner ?? null] })
        const answer = beginAnswer(rows[0]!, fingerprint, nowMs)
        // a record that keeps changing under it (or an owner that will not be released) is still in progress
        if (tries >= 5 && typeof answer !== 'object') return { state: 'in_progress', retryAfterMs: 1000 }
        if (answer === 'release') await releaseExpired(nowMs)
        else if (answer) return answer
      }
    },
    async completeIdempotent(scope: string, key: string, status: number, body: string): Promise<void> {
      await pool.query({
        name: 'riskcheck_idempotency_complete',
        text: 'UPDATE idempotency SET status = $3, body = $4 WHERE scope = $1 AND idem_key = $2',
        values: [scope, key, status, body],
      })
    },
    async abandonIdempotent(scope: string, key: string, owner?: string): Promise<void> {
      await pool.query('DELETE FROM idempotency WHERE scope = $1 AND idem_key = $2 AND status IS NULL AND ($3::text IS NULL OR owner = $3)', [scope, key, owner ?? null])
    },
    async purgeExpired(nowMs: number): Promise<number> {
      const { rows } = await pool.query<{ n: number }>(
        `WITH c AS (DELETE FROM result_cache WHERE expires_at <= $1 RETURNING 1), i AS (DELETE FROM idempotency WHERE expires_at <= $1 RETURNING 1)
         SELECT ((SELECT COUNT(*) FROM c) + (SELECT COUNT(*) FROM i))::int AS n`,
        [nowMs],
      )
      return rows[0]!.n
    },
  }
}
