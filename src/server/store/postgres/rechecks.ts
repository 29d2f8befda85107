/**
 * Pending rechecks of deferred email answers on PostgreSQL (migration 10): the contract of ../contracts/rechecks.ts.
 * Instances sharing the database take due rechecks with `FOR UPDATE SKIP LOCKED`: each goes to exactly one.
 */
import type pg from 'pg'
import { RECHECK_COLUMNS, recheckValues, toRecheck, type RecheckRow } from '../common/recheck-rows.js'
import type { RecheckStore } from '../contracts/rechecks.js'
import { inTransaction } from './client.js'
import { insertEvent } from './events.js'

const PLACEHOLDERS = RECHECK_COLUMNS.split(',').map((_, i) => `$${i + 1}`).join(', ')

/** The recheck table of a PostgreSQL pool. */
export function createPostgresRecheckStore(pool: pg.Pool): RecheckStore {
  return {
    async schedule(rechecks) {
      for (const r of rechecks) {
        await pool.query(`INSERT INTO email_rechecks (${RECHECK_COLUMNS}) VALUES (${PLACEHOLDERS}) ON CONFLICT (id) DO NOTHING`, recheckValues(r))
      }
    },
    async claimDue(nowMs, limit, leaseMs) {
      const { rows } = await pool.query<RecheckRow>(
        `UPDATE email_rechecks SET due_at = $2 WHERE id IN (
           SELECT id FROM email_rechecks WHERE due_at <= $1 ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED
         ) RETURNING ${RECHECK_COLUMNS}`,
        [nowMs, nowMs + leaseMs, limit],
      )
      return rows.map(toRecheck)
    },
    async reschedule(id, attempt, dueAt) {
      await pool.query('UPDATE email_rechecks SET attempt = $1, due_at = $2 WHERE id = $3', [attempt, dueAt, id])
    },
    async complete(id, event) {
      await inTransaction(pool, async (client) => {
        // announced only by the one that deleted it (a claim that ran out may have been taken again meanwhile)
        const gone = await client.query('DELETE FROM email_rechecks WHERE id = $1', [id])
        if (gone.rowCount === 1 && event) await insertEvent(client, event)
      })
    },
    async pendingForJob(jobId) {
      const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM email_rechecks WHERE bulk_job_id = $1', [jobId])
      return Number(rows[0]?.n ?? 0)
    },
    async cancelForRequest(orgId, requestId) {
      return (await pool.query('DELETE FROM email_rechecks WHERE request_id = $1 AND org_id = $2', [requestId, orgId])).rowCount ?? 0
    },
    async count() {
      const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM email_rechecks')
      return Number(rows[0]?.n ?? 0)
    },
  }
}
