/**
 * Pending rechecks of deferred email answers on the SQLite file (migration 011): the contract of
 * ../contracts/rechecks.ts. A claim is one write transaction, so two processes on one file never take the same one.
 */
import type Database from 'better-sqlite3'
import type { EventPayload } from '../../../schema.js'
import { RECHECK_COLUMNS, recheckValues, toRecheck, type RecheckRow } from '../common/recheck-rows.js'
import type { RecheckStore, StoredRecheck } from '../contracts/rechecks.js'
import { outboxWriter } from './outbox.js'

/** The recheck table of a SQLite database. */
export function createSqliteRecheckStore(db: Database.Database): RecheckStore {
  const insert = db.prepare(`INSERT OR IGNORE INTO email_rechecks (${RECHECK_COLUMNS}) VALUES (${RECHECK_COLUMNS.split(',').map(() => '?').join(', ')})`)
  const due = db.prepare(`SELECT ${RECHECK_COLUMNS} FROM email_rechecks WHERE due_at <= ? ORDER BY due_at LIMIT ?`)
  const take = db.prepare('UPDATE email_rechecks SET due_at = ? WHERE id = ?')
  const move = db.prepare('UPDATE email_rechecks SET attempt = ?, due_at = ? WHERE id = ?')
  const remove = db.prepare('DELETE FROM email_rechecks WHERE id = ?')
  const ofJob = db.prepare('SELECT count(*) AS n FROM email_rechecks WHERE bulk_job_id = ?')
  const all = db.prepare('SELECT count(*) AS n FROM email_rechecks')
  const ofRequest = db.prepare('DELETE FROM email_rechecks WHERE request_id = ? AND org_id = ?')
  const writeEvent = outboxWriter(db)

  const scheduleTx = db.transaction((rechecks: readonly StoredRecheck[]) => {
    for (const r of rechecks) insert.run(...recheckValues(r))
  })
  const claimTx = db.transaction((nowMs: number, limit: number, leaseMs: number) => {
    const rows = (due.all(nowMs, limit) as RecheckRow[]).map(toRecheck)
    for (const r of rows) take.run(nowMs + leaseMs, r.id)
    return rows
  })
  const completeTx = db.transaction((id: string, event: EventPayload | null) => {
    // announced only by the one that deleted it (a claim that ran out may have been taken again meanwhile)
    if (remove.run(id).changes === 1 && event) writeEvent(event)
  })
  return {
    schedule: (rechecks) => void scheduleTx.immediate(rechecks),
    claimDue: (nowMs, limit, leaseMs) => claimTx.immediate(nowMs, limit, leaseMs),
    reschedule: (id, attempt, dueAt) => void move.run(attempt, dueAt, id),
    complete: (id, event) => completeTx.immediate(id, event),
    pendingForJob: (jobId) => (ofJob.get(jobId) as { n: number }).n,
    cancelForRequest: (orgId, requestId) => ofRequest.run(requestId, orgId).changes,
    count: () => (all.get() as { n: number }).n,
  }
}
