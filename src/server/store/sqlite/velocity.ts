/**
 * Velocity counts in the SQLite file (migrations 006, 014, 015): one row per check and keyed hash, numbered per key, so a
 * window's count is two index seeks; each hit runs inside an IMMEDIATE transaction — with `groupWrite`, the group
 * commit of its event-loop turn (./group-commit.ts) — so every process on the file counts exactly. What this
 * connection last read of a key is kept while no other connection writes: then a hit is one INSERT (and a key's
 * first hit reads only that it has no rows).
 * The design: docs/decisions.md, "Velocity in the service" → "SQLite counts".
 */
import type Database from 'better-sqlite3'
import { LRUCache } from 'lru-cache'
import { DAY_MS, HOUR_MS, type WindowCount } from '../../../velocity/store.js'
import type { ServerVelocityStore } from '../contracts/velocity.js'

/** Hits between two sweeps of expired rows of keys not checked again. */
const SWEEP_EVERY = 128
/** Most rows one sweep deletes (a sweep stays short inside a request's transaction). */
const SWEEP_LIMIT = 1000
/** Keys whose state is kept in memory (the least recently used forgotten first). */
const MAX_KEYS = 10_000

/** A key's first row after a time: its number and time, and the time it was asked after. */
interface Mark {
  seq: number
  at: number
  since: number
}

/** What this connection knows of a key's rows (valid while no other connection committed, see {@link KnownRows}). */
interface KeyState {
  /** The newest row (null: none). */
  last: { seq: number; at: number } | null
  hour?: Mark | undefined
  day?: Mark | undefined
  /** The day's first number at this connection's last delete of the key's older rows (a hint, see the header). */
  floor?: number | undefined
}

/**
 * The keys' states of one connection, shared by every velocity store on it (a purge by one reaches the others).
 * `version`: the file's `PRAGMA data_version` when they were last valid — another connection's commit changes it,
 * and the states are dropped. `purgedTo`: no mark at or before it is trusted (rows up to it may have been deleted).
 */
interface KnownRows {
  version: number | undefined
  /** The least recently used state goes first (lru-cache: O(1), where a Map's oldest key costs a scan of its deleted slots). */
  keys: LRUCache<string, KeyState>
  purgedTo: number
}

const known = new WeakMap<Database.Database, KnownRows>()

/** A key's first row of a window still is `m` when nothing before `m` entered the window since it was read. */
const holds = (m: Mark | undefined, since: number, purgedTo: number): m is Mark => m !== undefined && since >= m.since && since < m.at && m.at > purgedTo

/** One row to insert: the key's number, time and state. */
interface Planned {
  key: string
  seq: number
  at: number
  again: boolean
  /** The key has no rows yet: its row is the first of both windows (nothing to read or delete). */
  first: boolean
  state: KeyState
}

function statements(db: Database.Database) {
  const inserts: Database.Statement[] = []
  return {
    version: db.prepare('PRAGMA data_version').pluck(),
    newest: db.prepare('SELECT seq, at FROM velocity_hits WHERE key = ? ORDER BY at DESC, seq DESC LIMIT 1'),
    /** The statement inserting `n` rows (key, seq, at, check_id each). */
    insert(n: number): Database.Statement {
      return (inserts[n] ??= db.prepare(`INSERT INTO velocity_hits (key, seq, at, check_id) VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?)').join(', ')}`))
    },
    recorded: db.prepare('SELECT 1 FROM velocity_hits WHERE key = ? AND check_id = ? AND at > ?').pluck(),
    firstAfter: db.prepare('SELECT seq, at FROM velocity_hits WHERE key = ? AND at > ? ORDER BY at, seq LIMIT 1'),
    dropOld: db.prepare('DELETE FROM velocity_hits WHERE key = ? AND at <= ?'),
    anyOld: db.prepare('SELECT 1 FROM velocity_hits WHERE at <= ? LIMIT 1').pluck(),
    sweep: db.prepare('DELETE FROM velocity_hits WHERE (key, at, seq) IN (SELECT key, at, seq FROM velocity_hits WHERE at <= ? LIMIT ?)'),
  }
}

/**
 * The velocity store of the SQLite store's database `db` (migrated). `groupWrite` (the store's group commit): the
 * hits of one turn share its transaction instead of one transaction each.
 */
export function createSqliteVelocityStore(db: Database.Database, groupWrite?: <T>(write: () => T) => Promise<T>): ServerVelocityStore {
  const q = statements(db)
  let rows = known.get(db)
  if (!rows) known.set(db, (rows = { version: undefined, keys: new LRUCache({ max: MAX_KEYS }), purgedTo: -Infinity }))
  const k = rows
  let hits = 0
  const forget = () => {
    k.keys.clear()
    k.version = undefined
  }
  const deleted = (cutoff: number) => void (k.purgedTo = Math.max(k.purgedTo, cutoff))
  // the sweep's DELETE costs hundreds of µs on a file even when nothing is old: an index seek tells first
  const purge = (nowMs: number, limit = SWEEP_LIMIT): number => {
    if (q.anyOld.get(nowMs - DAY_MS) === undefined) return 0
    deleted(nowMs - DAY_MS)
    return q.sweep.run(nowMs - DAY_MS, limit).changes
  }
  const stateOf = (key: string): KeyState => {
    let s = k.keys.get(key)
    if (s) return s
    const last = q.newest.get(key) as { seq: number; at: number } | undefined
    k.keys.set(key, (s = { last: last ?? null }))
    return s
  }
  /** A window's first row (its mark kept, or read and kept). */
  const firstOf = (s: KeyState, which: 'hour' | 'day', key: string, since: number): Mark | undefined => {
    const m = s[which]
    if (holds(m, since, k.purgedTo)) return m
    const r = q.firstAfter.get(key, since) as { seq: number; at: number } | undefined
    return (s[which] = r && { seq: r.seq, at: r.at, since })
  }
  /** Inserts the planned rows (one statement) and counts each key. Runs inside a transaction. */
  const finish = (plan: readonly Planned[], nowMs: number, checkId: string | null): WindowCount[] => {
    const args: unknown[] = []
    for (const p of plan) if (!p.again) args.push(p.key, p.seq, p.at, checkId)
    if (args.length > 0) q.insert(args.length / 4).run(...args)
    const out: WindowCount[] = []
    for (const p of plan) {
      const s = p.state
      s.last = { seq: p.seq, at: p.at }
      if (p.first) {
        // what the reads below would find: this row, the only one
        s.hour = { seq: p.seq, at: p.at, since: nowMs - HOUR_MS }
        s.day = { seq: p.seq, at: p.at, since: nowMs - DAY_MS }
        s.floor = p.seq
        out.push({ hour: 1, day: 1 })
        continue
      }
      const hourFirst = firstOf(s, 'hour', p.key, nowMs - HOUR_MS)
      const dayFirst = firstOf(s, 'day', p.key, nowMs - DAY_MS)
      out.push({ hour: hourFirst === undefined ? 0 : p.seq - hourFirst.seq + 1, day: dayFirst === undefined ? 0 : p.seq - dayFirst.seq + 1 })
      // rows older than the day go, unless this connection knows there are none: after its last delete for the key,
      // none below that day's first number was left, and the day's first number has not moved since (a hint only:
      // counts never depend on it, and the sweep removes whatever a wrong hint leaves)
      if (dayFirst === undefined || s.floor !== dayFirst.seq) {
        q.dropOld.run(p.key, nowMs - DAY_MS)
        deleted(nowMs - DAY_MS)
        s.floor = dayFirst?.seq
      }
    }
    if (++hits % SWEEP_EVERY === 0) purge(nowMs)
    return out
  }
  // with reads or deletes after the insert, the hit takes a savepoint of its own: it is written whole or not at all
  const finishTx = db.transaction(finish)
  const eachTx = db.transaction((keys: readonly string[], nowMs: number, checkId: string | null) => keys.flatMap((key) => finish(plan([key], nowMs, checkId), nowMs, checkId)))
  /** One hit, inside a transaction: the reads first, then the one INSERT. */
  const hit = (keys: readonly string[], nowMs: number, checkId: string | null): WindowCount[] => {
    const version = q.version.get() as number
    if (version !== k.version) {
      k.keys.clear()
      k.version = version
    }
    // a key twice in one hit: the second sees the first's row (states read again after the first is written)
    if (new Set(keys).size !== keys.length) return eachTx(keys, nowMs, checkId)
    const planned = plan(keys, nowMs, checkId)
    const settled = (hits + 1) % SWEEP_EVERY !== 0 && planned.every((p) => {
      const s = p.state
      return p.first || holds(s.hour, nowMs - HOUR_MS, k.purgedTo) && holds(s.day, nowMs - DAY_MS, k.purgedTo) && s.floor === s.day.seq
    })
    return settled ? finish(planned, nowMs, checkId) : finishTx(planned, nowMs, checkId)
  }
  const plan = (keys: readonly string[], nowMs: number, checkId: string | null): Planned[] =>
    keys.map((key) => {
      const s = stateOf(key)
      const last = s.last
      // a check recorded before under its id (a retry of the same request) is not counted again
      const again = checkId !== null && last !== null && q.recorded.get(key, checkId, nowMs - DAY_MS) !== undefined
      // times never go back within a key (another process's clock a little behind), so numbers follow times
      return { key, state: s, again, first: last === null, seq: again ? last.seq : (last?.seq ?? 0) + 1, at: again ? last.at : Math.max(nowMs, last?.at ?? nowMs) }
    })
  /** A hit that threw, or whose transaction did not commit, leaves no state behind. */
  const guarded = (keys: readonly string[], at: number, id: string | null): WindowCount[] => {
    try {
      return hit(keys, at, id)
    } catch (e) {
      forget()
      throw e
    }
  }
  const ownTx = db.transaction(guarded)
  return {
    hit(keys, nowMs, checkId) {
      if (keys.length === 0) return []
      const at = Math.floor(nowMs)
      const id = checkId ?? null
      if (!groupWrite) {
        try {
          return ownTx.immediate(keys, at, id)
        } catch (e) {
          forget()
          throw e
        }
      }
      const done = groupWrite(() => guarded(keys, at, id))
      done.catch(forget)
      return done
    },
    purge,
  }
}
