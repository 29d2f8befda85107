/**
 * The review queue on PostgreSQL: the {@link ReviewStore} contract of ../contracts/reviews.ts over a pool shared by
 * every instance, with the table of SQLite migration 009_reviews (times as BIGINT unix ms; PostgreSQL migration
 * version 8). A decision's webhook event goes into the outbox in the transaction that marks it carried out.
 */
import type pg from 'pg'
import { keptSince, REVIEW_COLUMNS, reviewValues, toReview, type ReviewRow } from '../common/review-rows.js'
import type { ReviewStore } from '../contracts/reviews.js'
import { inTransaction } from './client.js'
import { insertEvent } from './events.js'

const COLUMN_TYPES = ['text', 'text', 'text', 'text', 'text', 'text', 'int', 'text', 'text', 'text', 'bigint', 'text']

/**
 * The PostgreSQL review store.
 *
 * @example
 * const reviews = createPostgresReviewStore(postgresStore.pool)
 */
export function createPostgresReviewStore(pool: pg.Pool): ReviewStore {
  return {
    async addReviews(rows) {
      if (rows.length === 0) return
      const values = rows.map(reviewValues)
      const columns = COLUMN_TYPES.map((_, i) => values.map((v) => v[i]))
      const unnest = COLUMN_TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ')
      await pool.query(`INSERT INTO reviews (${REVIEW_COLUMNS}) SELECT * FROM unnest(${unnest}) ON CONFLICT (request_id) DO NOTHING`, columns)
    },
    async getReview(orgId, mode, id, cutoffMs) {
      const { rows } = await pool.query<ReviewRow>(`SELECT * FROM reviews WHERE id = $1 AND org_id = $2 AND mode = $3 AND ${keptSince('$4')}`, [id, orgId, mode, cutoffMs])
      return rows[0] ? toReview(rows[0]) : null
    },
    async listReviews(orgId, mode, query) {
      const where = ['org_id = $1', 'mode = $2', keptSince('$3')]
      const args: unknown[] = [orgId, mode, query.cutoffMs]
      const add = (sql: string, v?: unknown) => {
        if (v !== undefined) args.push(v)
        where.push(sql.replace('?', `$${args.length}`))
      }
      if (query.type !== undefined) add('type = ?', query.type)
      if (query.status === 'pending') add('decision IS NULL')
      if (query.status === 'decided') add('decision IS NOT NULL')
      if (query.minScore !== undefined) add('score >= ?', query.minScore)
      if (query.maxScore !== undefined) add('score <= ?', query.maxScore)
      if (query.factor !== undefined) add('strpos(factor_codes, ?) > 0', ` ${query.factor} `)
      if (query.beforeSeq !== undefined) add('seq < ?', query.beforeSeq)
      args.push(query.limit + 1)
      const { rows } = await pool.query<ReviewRow>(`SELECT * FROM reviews WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${args.length}`, args)
      const data = rows.slice(0, query.limit).map(toReview)
      return { data, nextSeq: rows.length > query.limit ? (data[data.length - 1]?.seq ?? null) : null }
    },
    async claimDecision(orgId, mode, id, c) {
      // One statement: of two racing claims the row lock lets one through, the other matches no pending row; an
      // entry past the cutoff matches none either.
      const { rows } = await pool.query<ReviewRow>(
        `UPDATE reviews SET decision = $1, decided_by = $2, note = $3, list_id = $4, decided_at = $5
         WHERE id = $6 AND org_id = $7 AND mode = $8 AND decision IS NULL AND ${keptSince('$9')} RETURNING *`,
        [c.decision, c.decidedBy, c.note, c.listId, c.at, id, orgId, mode, c.cutoffMs],
      )
      if (rows[0]) return { status: 'claimed', record: toReview(rows[0]) }
      const cur = await this.getReview(orgId, mode, id, c.cutoffMs)
      return cur ? { status: 'decided', record: cur } : { status: 'not_found' }
    },
    completeDecision: (orgId, mode, id, done, event) =>
      inTransaction(pool, async (c) => {
        const r = await c.query(
          'UPDATE reviews SET outcome_id = $1, completed_at = $2 WHERE id = $3 AND org_id = $4 AND mode = $5 AND decision IS NOT NULL AND completed_at IS NULL',
          [done.outcomeId, done.at, id, orgId, mode],
        )
        if ((r.rowCount ?? 0) === 0) return false
        await insertEvent(c, event)
        return true
      }),
    async purge(cutoff) {
      const r = await pool.query('DELETE FROM reviews WHERE (decided_at IS NOT NULL AND decided_at < $1) OR (decided_at IS NULL AND created_at < $1)', [cutoff])
      return r.rowCount ?? 0
    },
  }
}
