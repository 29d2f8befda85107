/**
 * Outcomes on SQLite (tables of migration 008_outcomes in ./migrations.ts): the {@link OutcomeStore} contract of
 * ../contracts/outcomes.ts over the server's one database file.
 */
import { randomBytes } from 'node:crypto'
import type Database from 'better-sqlite3'
import { toOutcome, type OutcomeRow } from '../common/outcome-rows.js'
import type {
  AnswerInputsRecord,
  CurrentLabel,
  InputHashes,
  NewOutcome,
  OutcomeKind,
  OutcomeMode,
  OutcomeRecord,
  OutcomeStore,
  RecordedOutcome,
} from '../contracts/outcomes.js'

/** A store type whose methods answer synchronously. */
type Sync<S> = { [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => Awaited<R> : S[K] }


/**
 * The SQLite outcome store. `groupWrite` (the store's group commit): the input hashes of the answers of one turn are
 * written in its transaction, with the settlements of the same requests.
 *
 * @example
 * const outcomes = createSqliteOutcomeStore(createSqliteStore('./riskcheck.sqlite').db)
 */
export function createSqliteOutcomeStore(db: Database.Database, groupWrite?: <T>(write: () => T) => Promise<T>): Sync<OutcomeStore> & Pick<OutcomeStore, 'recordInputs'> {
  db.prepare(`INSERT OR IGNORE INTO meta (key, value) VALUES ('outcome_hmac_key', ?)`).run(randomBytes(32).toString('hex'))
  const key = (db.prepare(`SELECT value FROM meta WHERE key = 'outcome_hmac_key'`).pluck().get() as string)
  const q = {
    input: db.prepare('INSERT OR IGNORE INTO answer_inputs (request_id, org_id, mode, at, email_hash, phone_hash, ip_hash) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    inputsOf: db.prepare('SELECT email_hash, phone_hash, ip_hash FROM answer_inputs WHERE request_id = ? AND org_id = ? AND mode = ?'),
    forget: db.prepare('DELETE FROM answer_inputs WHERE request_id = ? AND org_id = ? AND mode = ?'),
    current: db.prepare('SELECT * FROM outcomes WHERE org_id = ? AND mode = ? AND subject = ? AND superseded_at IS NULL'),
    supersede: db.prepare('UPDATE outcomes SET superseded_at = ? WHERE seq = ?'),
    insert: db.prepare(
      `INSERT INTO outcomes (id, org_id, mode, request_id, subject, outcome, note, email_hash, phone_hash, ip_hash, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    ),
    labels: db.prepare('SELECT seq, outcome, request_id, email_hash, phone_hash, ip_hash FROM outcomes WHERE org_id = ? AND mode = ? AND superseded_at IS NULL'),
    version: db.prepare('SELECT version FROM outcome_versions WHERE org_id = ? AND mode = ?').pluck(),
    bump: db.prepare('INSERT INTO outcome_versions (org_id, mode, version) VALUES (?, ?, 1) ON CONFLICT (org_id, mode) DO UPDATE SET version = version + 1'),
    bumpPurged: db.prepare(
      `UPDATE outcome_versions SET version = version + 1
       WHERE EXISTS (SELECT 1 FROM outcomes o WHERE o.org_id = outcome_versions.org_id AND o.mode = outcome_versions.mode AND o.created_at < ?)`,
    ),
    purgeOutcomes: db.prepare('DELETE FROM outcomes WHERE created_at < ?'),
    purgeInputs: db.prepare('DELETE FROM answer_inputs WHERE at < ?'),
  }
  const writeInputs = db.transaction((rows: readonly AnswerInputsRecord[]) => {
    for (const r of rows) q.input.run(r.requestId, r.orgId, r.mode, r.at, r.email, r.phone, r.ip)
  })
  const recordOne = (orgId: string, mode: OutcomeMode, o: NewOutcome, nowMs: number): RecordedOutcome => {
    const cur = q.current.get(orgId, mode, o.subject) as OutcomeRow | undefined
    if (cur && cur.outcome === o.outcome) return { status: 'unchanged', record: toOutcome(cur) }
    if (cur) q.supersede.run(nowMs, cur.seq)
    const row = q.insert.get(o.id, orgId, mode, o.requestId, o.subject, o.outcome, o.note, o.email, o.phone, o.ip, nowMs) as OutcomeRow
    return { status: 'recorded', record: toOutcome(row) }
  }
  // the org's outcome version is bumped in the same transaction as the outcomes it records (read with the API key)
  const recordTx = db.transaction((orgId: string, mode: OutcomeMode, list: readonly NewOutcome[], nowMs: number) => {
    const out = list.map((o) => recordOne(orgId, mode, o, nowMs))
    if (out.some((r) => r.status === 'recorded')) q.bump.run(orgId, mode)
    return out
  })
  const labelsTx = db.transaction((orgId: string, mode: OutcomeMode) => ({
    version: (q.version.get(orgId, mode) as number | undefined) ?? null,
    rows: (q.labels.all(orgId, mode) as Array<{ seq: number; outcome: string; request_id: string | null; email_hash: string | null; phone_hash: string | null; ip_hash: string | null }>).map(
      (r): CurrentLabel => ({ seq: r.seq, outcome: r.outcome as OutcomeKind, requestId: r.request_id, email: r.email_hash, phone: r.phone_hash, ip: r.ip_hash }),
    ),
  }))
  const purgeTx = db.transaction((cutoff: number) => {
    q.bumpPurged.run(cutoff)
    return q.purgeOutcomes.run(cutoff).changes + q.purgeInputs.run(cutoff).changes
  })
  // the rows of one group commit: one savepoint for all of them, in the transaction of the turn's settlements
  let batch: AnswerInputsRecord[] | null = null
  let batchDone: Promise<void> = Promise.resolve()
  return {
    hmacKey: () => key,
    recordInputs(rows) {
      if (rows.length === 0) return
      if (!groupWrite) return void writeInputs.immediate(rows)
      if (batch) return (batch.push(...rows), batchDone)
      const mine = (batch = [...rows])
      const done = groupWrite(() => {
        batch = null
        writeInputs(mine)
      })
      // a group that failed before its writes ran (the file busy past its timeout) leaves no batch behind
      done.catch(() => {
        if (batch === mine) batch = null
      })
      return (batchDone = done)
    },
    forgetInputs(orgId, mode, requestIds) {
      let n = 0
      for (const id of requestIds) n += q.forget.run(id, orgId, mode).changes
      return n
    },
    inputsOf(orgId, mode, requestIds) {
      const found = new Map<string, InputHashes>()
      for (const id of requestIds) {
        const r = q.inputsOf.get(id, orgId, mode) as { email_hash: string | null; phone_hash: string | null; ip_hash: string | null } | undefined
        if (r) found.set(id, { email: r.email_hash, phone: r.phone_hash, ip: r.ip_hash })
      }
      return found
    },
    recordOutcomes: (orgId, mode, list, nowMs) => recordTx.immediate(orgId, mode, list, nowMs),
    listOutcomes(orgId, mode, query) {
      const where = ['org_id = ?', 'mode = ?']
      const args: unknown[] = [orgId, mode]
      if (query.requestId !== undefined) (where.push('request_id = ?'), args.push(query.requestId))
      if (query.outcome !== undefined) (where.push('outcome = ?'), args.push(query.outcome))
      if (query.beforeSeq !== undefined) (where.push('seq < ?'), args.push(query.beforeSeq))
      const rows = db.prepare(`SELECT * FROM outcomes WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT ?`).all(...args, query.limit + 1) as OutcomeRow[]
      const data = rows.slice(0, query.limit).map(toOutcome)
      return { data, nextSeq: rows.length > query.limit ? (data[data.length - 1]?.seq ?? null) : null }
    },
    currentLabels: (orgId, mode) => labelsTx(orgId, mode),
    version: (orgId, mode) => (q.version.get(orgId, mode) as number | undefined) ?? null,
    purge: (cutoff) => purgeTx.immediate(cutoff),
  }
}
