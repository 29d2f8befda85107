/**
 * The review queue on SQLite (table of migration 009_reviews in ./migrations.ts): the {@link ReviewStore} contract of
 * ../contracts/reviews.ts over the server's one database file; a decision's webhook event goes into the same file's
 * outbox in the transaction that marks it carried out.
 */
import type Database from 'better-sqlite3'
import { keptSince, REVIEW_COLUMNS, reviewValues, toReview, type ReviewRow } from '../common/review-rows.js'
import type { ClaimResult, NewReview, ReviewStore } from '../contracts/reviews.js'
import { outboxWriter } from './outbox.js'

/** A store type whose methods answer synchronously. */
type Sync<S> = { [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => Awaited<R> : S[K] }

/**
 * The SQLite review store. `groupWrite` (the store's group commit) batches the entries answers add.
 *
 * @example
 * const reviews = createSqliteReviewStore(createSqliteStore('./riskcheck.sqlite').db)
 */
export function createSqliteReviewStore(db: Database.Database, groupWrite?: <T>(write: () => T) => Promise<T>): Sync<ReviewStore> & Pick<ReviewStore, 'addReviews'> {
  const insertEvent = outboxWriter(db)
  const q = {
    add: db.prepare(`INSERT OR IGNORE INTO reviews (${REVIEW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    get: db.prepare(`SELECT * FROM reviews WHERE id = ? AND org_id = ? AND mode = ? AND ${keptSince('?')}`),
    claim: db.prepare(
      `UPDATE reviews SET decision = ?, decided_by = ?, note = ?, list_id = ?, decided_at = ?
       WHERE id = ? AND org_id = ? AND mode = ? AND decision IS NULL AND ${keptSince('?')} RETURNING *`,
    ),
    complete: db.prepare('UPDATE reviews SET outcome_id = ?, completed_at = ? WHERE id = ? AND org_id = ? AND mode = ? AND decision IS NOT NULL AND completed_at IS NULL'),
    purge: db.prepare('DELETE FROM reviews WHERE (decided_at IS NOT NULL AND decided_at < ?) OR (decided_at IS NULL AND created_at < ?)'),
  }
  const addTx = db.transaction((rows: readonly NewReview[]) => {
    for (const r of rows) q.add.run(...reviewValues(r))
  })
  const claimTx = db.transaction((orgId: string, mode: string, id: string, c: Parameters<ReviewStore['claimDecision']>[3]): ClaimResult => {
    const row = q.claim.get(c.decision, c.decidedBy, c.note, c.listId, c.at, id, orgId, mode, c.cutoffMs) as ReviewRow | undefined
    if (row) return { status: 'claimed', record: toReview(row) }
    const cur = q.get.get(id, orgId, mode, c.cutoffMs) as ReviewRow | undefined
    return cur ? { status: 'decided', record: toReview(cur) } : { status: 'not_found' }
  })
  const completeTx = db.transaction((orgId: string, mode: string, id: string, done: { outcomeId: string | null; at: number }, event: Parameters<ReviewStore['completeDecision']>[4]) => {
    if (q.complete.run(done.outcomeId, done.at, id, orgId, mode).changes === 0) return false
    insertEvent(event)
    return true
  })
  return {
    addReviews(rows) {
      if (rows.length === 0) return
      if (groupWrite) return groupWrite(() => addTx(rows))
      addTx.immediate(rows)
    },
    getReview(orgId, mode, id, cutoffMs) {
      const row = q.get.get(id, orgId, mode, cutoffMs) as ReviewRow | undefined
      return row ? toReview(row) : null
    },
    listReviews(orgId, mode, query) {
      const where = ['org_id = ?', 'mode = ?', keptSince('?')]
      const args: unknown[] = [orgId, mode, query.cutoffMs]
      const add = (sql: string, v?: unknown) => (where.push(sql), v !== undefined && args.push(v))
      if (query.type !== undefined) add('type = ?', query.type)
      if (query.status === 'pending') add('decision IS NULL')
      if (query.status === 'decided') add('decision IS NOT NULL')
      if (query.minScore !== undefined) add('score >= ?', query.minScore)
      if (query.maxScore !== undefined) add('score <= ?', query.maxScore)
      if (query.factor !== undefined) add('instr(factor_codes, ?) > 0', ` ${query.factor} `)
      if (query.beforeSeq !== undefined) add('seq < ?', query.beforeSeq)
      const rows = db.prepare(`SELECT * FROM reviews WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`).all(...args, query.limit + 1) as ReviewRow[]
      const data = rows.slice(0, query.limit).map(toReview)
      return { data, nextSeq: rows.length > query.limit ? (data[data.length - 1]?.seq ?? null) : null }
    },
    claimDecision: (orgId, mode, id, claim) => claimTx.immediate(orgId, mode, id, claim),
    completeDecision: (orgId, mode, id, done, event) => completeTx.immediate(orgId, mode, id, done, event),
    purge: (cutoff) => q.purge.run(cutoff, cutoff).changes,
  }
}
