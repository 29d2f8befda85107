/**
 * The PostgreSQL store: the {@link Store} of the SQLite one, row for row, for servers that run as several instances on
 * one database (docs/decisions.md "PostgreSQL store"). Migrations run on open unless `migrate: false`.
 */
import { randomBytes } from 'node:crypto'
import type pg from 'pg'
import { pgModule } from '../../lazy-packages.js'
import { periodAt } from '../../../accounts/ledger.js'
import { DEFAULT_PLANS, type Plan } from '../../../accounts/plans.js'
import { createPostgresCredits } from './credits.js'
import { boundedPoolSettings, DEFAULT_DATABASE_TIMEOUT_MS, guardPool } from './guard.js'
import type { Availability } from '../../outage.js'
import { numberOption } from '../../../option-checks.js'
import { createAuthReads } from './auth-read.js'
import { checkSchemaName, migratePostgres, newerError, POSTGRES_MIGRATIONS, postgresSchemaStatus } from './migrations.js'
import { createPostgresLeases } from './leases.js'
import { createTurnInputs, type TurnInputs } from './answer-inputs.js'
import { createPostgresRequests } from './requests.js'
import { toEvent, toOrg, toPlan, type EventRow, type OrgRow, type PlanRow } from './rows.js'
import { toKey, type KeyRow } from '../common/record-rows.js'
import type { Store, StoreProbe } from '../contracts/store.js'
/** A store type whose methods all return promises (a networked database). */
export type Promised<S> = {
  [K in keyof S]: S[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : S[K]
}

/** The PostgreSQL store; `pool` is exposed so later modules (bulk, webhooks) can run their statements on it. */
export interface PostgresStore extends Promised<Store> {
  readonly pool: pg.Pool
  /** Answer input hashes (outcomes) waiting for the statement that closes their turn's requests (./answer-inputs.ts). */
  readonly answerInputs: TurnInputs
  probe(): Promise<StoreProbe>
  /** Whether the database answers: down from a failed connection or statement until its probe answers again. */
  readonly availability: Availability
}

/** Options of {@link createPostgresStore}. */
export interface PostgresStoreOptions {
  /** A connection string (`postgres://user@host:5432/db`), or give `pool`. */
  connectionString?: string
  /** An existing pool (not closed by the store). With `schema`, its connections must already use that schema. */
  pool?: pg.Pool
  /** The schema of the tables (default: the connection's search_path, usually `public`); created by the migrations. */
  schema?: string
  /**
   * Apply pending migrations on open (default true). With false the store refuses to open a schema that is behind,
   * telling to run `riskcheck admin migrate` (deployments that migrate in a release step).
   */
  migrate?: boolean
  /**
   * Bound of every connection wait and statement of the store's own pool, in ms (default 5000): a database that stops
   * answering fails a request after this long instead of holding it (a pool of your own keeps its own settings; give
   * it `connectionTimeoutMillis` and `query_timeout`). Migrations run without it.
   */
  timeoutMs?: number
}

/** The plan catalogue as the columns of an `unnest` (one statement for any number of plans). */
const PLANS_FROM_ARRAYS = `SELECT id, name, price, credits, rate, (n - 1)::int
  FROM unnest($1::text[], $2::text[], $3::float8[], $4::bigint[], $5::int[]) WITH ORDINALITY AS p(id, name, price, credits, rate, n)`

const planArrays = (plans: readonly Plan[]) => [
  plans.map((p) => p.id),
  plans.map((p) => p.name),
  plans.map((p) => p.monthly_price),
  plans.map((p) => p.monthly_credits),
  plans.map((p) => p.rate_per_second),
]

/** Brings the schema to this code's version (or checks it is there) and checks the pool's connections use it. */
async function prepareSchema(pool: pg.Pool, options: PostgresStoreOptions): Promise<void> {
  const schemaOption = options.schema ? { schema: options.schema } : {}
  if (options.migrate !== false) {
    await migratePostgres(pool, schemaOption)
  } else {
    const { current, expected } = await postgresSchemaStatus(pool, schemaOption)
    if (current > expected) throw newerError(current, expected)
    if (current < expected) {
      throw new Error(
        `riskcheck store: the PostgreSQL schema is at version ${current}, this server needs ${expected}: run riskcheck admin migrate --database-url …`,
      )
    }
  }
  const { rows } = await pool.query<{ s: string | null }>('SELECT current_schema() AS s')
  if (options.schema && rows[0]!.s !== options.schema) {
    throw new TypeError(
      `riskcheck store: the pool's connections use schema ${rows[0]!.s}, not ${options.schema}; create the pool with options: '-c search_path=${options.schema}'`,
    )
  }
}

/** Seeds the key-hash secret and the default plans on first start (concurrent starters agree); returns the secret. */
async function seed(pool: pg.Pool): Promise<string> {
  await pool.query(
    `WITH secret AS (INSERT INTO meta (key, value) VALUES ('key_hash_secret', $6) ON CONFLICT (key) DO NOTHING)
     INSERT INTO plans (id, name, monthly_price, monthly_credits, rate_per_second, position)
     ${PLANS_FROM_ARRAYS} WHERE NOT EXISTS (SELECT 1 FROM plans) ON CONFLICT (id) DO NOTHING`,
    [...planArrays(DEFAULT_PLANS), randomBytes(32).toString('hex')],
  )
  return (await pool.query<{ value: string }>(`SELECT value FROM meta WHERE key = 'key_hash_secret'`)).rows[0]!.value
}

/**
 * Opens the PostgreSQL store: connects, migrates (unless `migrate: false`), seeds the default plan catalogue and the
 * key-hash secret on first start. `close()` ends the pool when the store created it.
 *
 * @example
 * const store = await createPostgresStore({ connectionString: process.env.DATABASE_URL })
 * const org = await store.createOrg({ name: 'Acme', planId: 'starter' }, Date.now())
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  checkSchemaName(options.schema)
  if (!options.pool && !options.connectionString) throw new TypeError('riskcheck store: give a connectionString or a pool')
  const timeoutMs = numberOption('timeoutMs', options.timeoutMs, DEFAULT_DATABASE_TIMEOUT_MS, { min: 1 }, 'riskcheck store')
  const own = !options.pool
  const connection = { connectionString: options.connectionString, ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}) }
  const pool = options.pool ?? new (pgModule().Pool)({ ...connection, ...boundedPoolSettings(timeoutMs) })
  // An idle connection dropped by the server (a restart, a failover) is an 'error' event of the pool; unheard, it
  // would end the process. The pool replaces the connection and the next query reports any real outage.
  if (own) pool.on('error', () => undefined)
  try {
    if (own && options.migrate !== false) {
      // migrations may take long: on a pool of their own, without the statement bound
      const unbounded = new (pgModule().Pool)({ ...connection, max: 1 })
      unbounded.on('error', () => undefined)
      await prepareSchema(unbounded, options).finally(() => unbounded.end())
    }
    await prepareSchema(pool, { ...options, migrate: own ? false : options.migrate })
    const guarded = guardPool(pool)
    return buildStore(guarded.pool, own ? pool : undefined, guarded.availability, await seed(guarded.pool))
  } catch (e) {
    if (own) await pool.end().catch(() => undefined)
    throw e
  }
}

/** The store over the guarded pool; `own` is the pool to end on close (the store created it). */
function buildStore(pool: pg.Pool, own: pg.Pool | undefined, availability: Availability, secret: string): PostgresStore {
  // The auth reads of requests arriving together: one statement (./per-turn.ts), or a part of a reservation's or a
  // close's (./auth-read.ts).
  const auth = createAuthReads(pool)
  const credits = createPostgresCredits(pool, auth.riders)
  const answerInputs = createTurnInputs(pool)
  const leases = createPostgresLeases(pool, credits, answerInputs, auth.riders)
  const requests = createPostgresRequests(pool, async (nowMs) => leases.releaseExpired(nowMs))
  const rows = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => (await pool.query<R>(text, values)).rows
  const keyOrNull = (r: KeyRow[]) => (r[0] ? toKey(r[0]) : null)
  let closed = false

  return {
    engine: 'postgres',
    pool,
    availability,
    ...requests,
    leases,
    answerInputs,
    keyHashSecret: async () => secret,
    listPlans: async () => (await rows<PlanRow>('SELECT id, name, monthly_price, monthly_credits, rate_per_second FROM plans ORDER BY position, id')).map(toPlan),
    async upsertPlans(plans) {
      await pool.query(
        `INSERT INTO plans (id, name, monthly_price, monthly_credits, rate_per_second, position) ${PLANS_FROM_ARRAYS}
         ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, monthly_price = EXCLUDED.monthly_price,
           monthly_credits = EXCLUDED.monthly_credits, rate_per_second = EXCLUDED.rate_per_second, position = EXCLUDED.position`,
        planArrays(plans),
      )
    },
    async createOrg(input, nowMs) {
      const { start, end } = periodAt(nowMs, nowMs)
      const created = await rows<OrgRow>(
        `INSERT INTO orgs (id, name, plan_id, monthly_credits, rate_per_second, created_at, period_anchor, period_start, period_end,
           subscription_credits, purchased_credits)
         SELECT $1, $2, p.id, p.monthly_credits, p.rate_per_second, $3, $3, $4, $5, p.monthly_credits, 0 FROM plans p WHERE p.id = $6
         RETURNING *`,
        [`org_${randomBytes(8).toString('hex')}`, input.name, nowMs, start, end, input.planId],
      )
      if (!created[0]) throw new RangeError(`unknown plan ${input.planId}`)
      return toOrg(created[0])
    },
    getOrg: credits.readOrg,
    async listOrgs(nowMs) {
      const all = await rows<OrgRow>('SELECT * FROM orgs ORDER BY created_at, id')
      const orgs = await Promise.all(all.map((r) => (nowMs < Number(r.period_end) ? toOrg(r) : credits.readOrg(r.id, nowMs))))
      return orgs.filter((o) => o !== null)
    },
    setOrgPlan: credits.setPlan,
    async setOrgSuspended(orgId, suspended, nowMs) {
      const r = await rows<OrgRow>('UPDATE orgs SET suspended = $2, plan_status = $3 WHERE id = $1 RETURNING *', [orgId, suspended, suspended ? 'suspended' : 'active'])
      if (!r[0]) return null
      return nowMs < Number(r[0].period_end) ? toOrg(r[0]) : credits.readOrg(orgId, nowMs)
    },
    async insertKey(k) {
      await pool.query(
        `INSERT INTO api_keys (id, org_id, name, mode, scopes, hash, last4, created_at, revoked_at, last_used_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [k.id, k.orgId, k.name, k.mode, k.scopes.join(' '), k.hash, k.last4, k.createdAt, k.revokedAt, k.lastUsedAt],
      )
    },
    getAuth: auth.read,
    getKey: async (keyId) => keyOrNull(await rows<KeyRow>('SELECT * FROM api_keys WHERE id = $1', [keyId])),
    listKeys: async (orgId) => (await rows<KeyRow>('SELECT * FROM api_keys WHERE org_id = $1 ORDER BY created_at, id', [orgId])).map(toKey),
    revokeKey: async (keyId, nowMs) =>
      keyOrNull(await rows<KeyRow>('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING *', [keyId, nowMs])),
    setKeyScopes: async (keyId, scopes) => keyOrNull(await rows<KeyRow>('UPDATE api_keys SET scopes = $2 WHERE id = $1 RETURNING *', [keyId, scopes.join(' ')])),
    async touchKey(keyId, nowMs) {
      await pool.query({
        name: 'riskcheck_touch_key',
        text: 'UPDATE api_keys SET last_used_at = $2::bigint WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::bigint - 60000)',
        values: [keyId, nowMs],
      })
    },
    reserveCredits: credits.reserve,
    refundCredits: credits.refund,
    balance: credits.balance,
    settleCredits: credits.settle,
    // A request's settlement shares one statement with those of the other requests of the same moment.
    grouped: { reserveCredits: credits.reserveGrouped, refundCredits: credits.refundGrouped, settleCredits: credits.settleGrouped },
    addCredits: credits.add,
    async listEvents({ orgId, afterId, limit = 100 }) {
      const after = 'COALESCE((SELECT seq FROM events WHERE id = $1), 0)'
      const r = orgId
        ? await rows<EventRow>(`SELECT * FROM events WHERE org_id = $3 AND seq > ${after} ORDER BY seq LIMIT $2`, [afterId ?? null, limit, orgId])
        : await rows<EventRow>(`SELECT * FROM events WHERE seq > ${after} ORDER BY seq LIMIT $2`, [afterId ?? null, limit])
      return r.map(toEvent)
    },
    async probe() {
      // a real round trip (throws when the database is unreachable) reading the migration ledger itself
      const r = await rows<{ v: number }>('SELECT COALESCE(MAX(version), 0)::int AS v FROM riskcheck_migrations')
      return { schemaVersion: r[0]!.v, expectedVersion: POSTGRES_MIGRATIONS.length }
    },
    async close() {
      if (closed) return
      closed = true
      availability.close()
      if (own) await own.end()
    },
  }
}
