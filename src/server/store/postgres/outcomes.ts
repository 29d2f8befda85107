/**
 * Outcomes on PostgreSQL: the {@link OutcomeStore} contract of ../contracts/outcomes.ts over a pool shared by every
 * instance, with the tables of SQLite migration 008_outcomes (times as BIGINT unix ms; PostgreSQL migration version 7).
 */
import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { inTransaction } from './client.js'
import { inputColumns, insertInputs, type TurnInputs } from './answer-inputs.js'
import type { PostgresStore } from './store.js'
import type { CurrentLabel, InputHashes, NewOutcome, OutcomeKind, OutcomeMode, OutcomeStore, RecordedOutcome } from '../contracts/outcomes.js'
import { toOutcome, type OutcomeRow } from '../common/outcome-rows.js'

const BUMP = `INSERT INTO outcome_versions (org_id, mode, version) VALUES ($1, $2, 1)
  ON CONFLICT (org_id, mode) DO UPDATE SET version = outcome_versions.version + 1`

/** Records one outcome inside the batch's transaction (see OutcomeStore.recordOutcomes). */
async function recordOne(c: pg.PoolClient, orgId: string, mode: OutcomeMode, o: NewOutcome, nowMs: number): Promise<RecordedOutcome> {
  const cur = (await c.query('SELECT * FROM outcomes WHERE org_id = $1 AND mode = $2 AND subject = $3 AND superseded_at IS NULL', [orgId, mode, o.subject])).rows[0] as OutcomeRow | undefined
  if (cur && cur.outcome === o.outcome) return { status: 'unchanged', record: toOutcome(cur) }
  if (cur) await c.query('UPDATE outcomes SET superseded_at = $1 WHERE seq = $2', [nowMs, cur.seq])
  const { rows } = await c.query(
    `INSERT INTO outcomes (id, org_id, mode, request_id, subject, outcome, note, email_hash, phone_hash, ip_hash, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
    [o.id, orgId, mode, o.requestId, o.subject, o.outcome, o.note, o.email, o.phone, o.ip, nowMs],
  )
  return { status: 'recorded', record: toOutcome(rows[0] as OutcomeRow) }
}

/**
 * The PostgreSQL outcome store. `turn` (the store's {@link PostgresStore.answerInputs}): input hashes are written
 * with the statement that closes their turn's requests.
 *
 * @example
 * const outcomes = createPostgresOutcomeStore(postgresStore.pool)
 */
export function createPostgresOutcomeStore(pool: pg.Pool, turn?: TurnInputs): OutcomeStore {
  let key: Promise<string> | undefined
  const readKey = async (): Promise<string> => {
    await pool.query(`INSERT INTO meta (key, value) VALUES ('outcome_hmac_key', $1) ON CONFLICT (key) DO NOTHING`, [randomBytes(32).toString('hex')])
    return (await pool.query<{ value: string }>(`SELECT value FROM meta WHERE key = 'outcome_hmac_key'`)).rows[0]!.value
  }
  return {
    hmacKey() {
      key ??= readKey()
      key.catch(() => (key = undefined))
      return key
    },
    async recordInputs(rows) {
      if (rows.length === 0) return
      if (turn) return turn.keep(rows)
      await pool.query(insertInputs(1), inputColumns(rows))
    },
    async forgetInputs(orgId, mode, requestIds) {
      if (requestIds.length === 0) return 0
      const { rowCount } = await pool.query('DELETE FROM answer_inputs WHERE request_id = ANY($1::text[]) AND org_id = $2 AND mode = $3', [[...requestIds], orgId, mode])
      return rowCount ?? 0
    },
    async inputsOf(orgId, mode, requestIds) {
      const found = new Map<string, InputHashes>()
      if (requestIds.length === 0) return found
      const { rows } = await pool.query('SELECT request_id, email_hash, phone_hash, ip_hash FROM answer_inputs WHERE request_id = ANY($1::text[]) AND org_id = $2 AND mode = $3', [
        [...requestIds],
        orgId,
        mode,
      ])
      for (const r of rows as Array<Record<string, string | null>>) found.set(r.request_id as string, { email: r.email_hash ?? null, phone: r.phone_hash ?? null, ip: r.ip_hash ?? null })
      return found
    },
    recordOutcomes: (orgId, mode, list, nowMs) =>
      inTransaction(pool, async (c) => {
        // Serializes writers of the same subjects (the partial unique index alone would turn a race into an error);
        // taken in one order, so two batches cannot deadlock.
        const keys = [...new Set(list.map((o) => `${orgId}|${mode}|${o.subject}`))].sort()
        await c.query('SELECT count(pg_advisory_xact_lock(hashtext(k))) FROM (SELECT k FROM unnest($1::text[]) AS k ORDER BY k) ordered', [keys])
        const out: RecordedOutcome[] = []
        for (const o of list) out.push(await recordOne(c, orgId, mode, o, nowMs))
        // the org's outcome version, bumped in the same transaction (read with the API key by the auth statement)
        if (out.some((r) => r.status === 'recorded')) await c.query(BUMP, [orgId, mode])
        return out
      }),
    async listOutcomes(orgId, mode, query) {
      const where = ['org_id = $1', 'mode = $2']
      const args: unknown[] = [orgId, mode]
      const add = (sql: string, v: unknown) => (args.push(v), where.push(sql.replace('?', `$${args.length}`)))
      if (query.requestId !== undefined) add('request_id = ?', query.requestId)
      if (query.outcome !== undefined) add('outcome = ?', query.outcome)
      if (query.beforeSeq !== undefined) add('seq < ?', query.beforeSeq)
      args.push(query.limit + 1)
      const { rows } = await pool.query(`SELECT * FROM outcomes WHERE ${where.join(' AND ')} ORDER BY seq DESC LIMIT $${args.length}`, args)
      const data = (rows as OutcomeRow[]).slice(0, query.limit).map(toOutcome)
      return { data, nextSeq: rows.length > query.limit ? (data[data.length - 1]?.seq ?? null) : null }
    },
    async currentLabels(orgId, mode) {
      // one statement, so the version and the labels are of one snapshot (no version row: no outcomes, no rows)
      const { rows } = await pool.query(
        `SELECT v.version, o.seq, o.outcome, o.request_id, o.email_hash, o.phone_hash, o.ip_hash
         FROM outcome_versions v LEFT JOIN outcomes o ON o.org_id = v.org_id AND o.mode = v.mode AND o.superseded_at IS NULL
         WHERE v.org_id = $1 AND v.mode = $2`,
        [orgId, mode],
      )
      const found = rows as Array<Record<string, string | null>>
      return {
        version: found[0] ? Number(found[0].version) : null,
        rows: found
          .filter((r) => r.seq !== null)
          .map((r): CurrentLabel => ({ seq: Number(r.seq), outcome: r.outcome as OutcomeKind, requestId: r.request_id ?? null, email: r.email_hash ?? null, phone: r.phone_hash ?? null, ip: r.ip_hash ?? null })),
      }
    },
    async version(orgId, mode) {
      const { rows } = await pool.query<{ version: string }>('SELECT version FROM outcome_versions WHERE org_id = $1 AND mode = $2', [orgId, mode])
      return rows[0] ? Number(rows[0].version) : null
    },
    purge: (cutoff) =>
      inTransaction(pool, async (c) => {
        await c.query(
          `UPDATE outcome_versions v SET version = v.version + 1
           WHERE EXISTS (SELECT 1 FROM outcomes o WHERE o.org_id = v.org_id AND o.mode = v.mode AND o.created_at < $1)`,
          [cutoff],
        )
        const a = await c.query('DELETE FROM outcomes WHERE created_at < $1', [cutoff])
        const b = await c.query('DELETE FROM answer_inputs WHERE at < $1', [cutoff])
        return (a.rowCount ?? 0) + (b.rowCount ?? 0)
      }),
  }
}
