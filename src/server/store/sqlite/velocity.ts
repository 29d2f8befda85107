/**
 * Velocity counts in the SQLite file (migrations 006, 014): one row per check and keyed hash, numbered per key, so a
 * window's count is two index seeks; each hit runs inside an IMMEDIATE transaction — with `groupWrite`, the group
 * commit of its event-loop turn (./group-commit.ts) — so every process on the file counts exactly.
 * The design: docs/decisions.md, "Velocity in the service" → "SQLite counts".
 */
import type Database from 'better-sqlite3'
import { DAY_MS, HOUR_MS, type WindowCount } from '../../../velocity/store.js'
import type { ServerVelocityStore } from '../contracts/velocity.js'

/** Hits between two sweeps of expired rows of keys not checked again. */
const SWEEP_EVERY = 128
/** Most rows one sweep deletes (a sweep stays short inside a request's transaction). */
const SWEEP_LIMIT = 1000
/** Keys whose last delete of old rows is remembered (the oldest forgotten first). */
const MAX_FLOORS = 10_000

/**
 * The velocity store of the SQLite store's database `db` (migrated). `groupWrite` (the store's group commit): the
 * hits of one turn share its transaction (each in a savepoint) instead of one transaction each.
 */
export function createSqliteVelocityStore(db: Database.Database, groupWrite?: <T>(write: () => T) => Promise<T>): ServerVelocityStore {
  const newest = db.prepare('SELECT seq, at FROM velocity_hits WHERE key = ? ORDER BY seq DESC LIMIT 1')
  const insert = db.prepare('INSERT INTO velocity_hits (key, seq, at, check_id) VALUES (?, ?, ?, ?)')
  const recorded = db.prepare('SELECT 1 FROM velocity_hits WHERE key = ? AND check_id = ? AND at > ?').pluck()
  const firstAfter = db.prepare('SELECT seq FROM velocity_hits WHERE key = ? AND at > ? ORDER BY at, seq LIMIT 1').pluck()
  const dropOld = db.prepare('DELETE FROM velocity_hits WHERE key = ? AND at <= ?')
  const sweep = db.prepare('DELETE FROM velocity_hits WHERE (key, seq) IN (SELECT key, seq FROM velocity_hits WHERE at <= ? LIMIT ?)')
  let hits = 0
  // per key: the day's first number at this process's last delete of the key's older rows
  const floors = new Map<string, number>()
  const purge = (nowMs: number, limit = SWEEP_LIMIT): number => sweep.run(nowMs - DAY_MS, limit).changes
  const hit = db.transaction((keys: readonly string[], nowMs: number, checkId: string | null): WindowCount[] => {
    const out: WindowCount[] = []
    for (const key of keys) {
      const last = newest.get(key) as { seq: number; at: number } | undefined
      // a check recorded before under its id (a retry of the same request) is not counted again
      const again = checkId !== null && last !== undefined && recorded.get(key, checkId, nowMs - DAY_MS) !== undefined
      const seq = again ? last.seq : (last?.seq ?? 0) + 1
      // times never go back within a key (another process's clock a little behind), so numbers follow times
      if (!again) insert.run(key, seq, Math.max(nowMs, last?.at ?? nowMs), checkId)
      const hourFirst = firstAfter.get(key, nowMs - HOUR_MS) as number | undefined
      const dayFirst = firstAfter.get(key, nowMs - DAY_MS) as number | undefined
      out.push({ hour: hourFirst === undefined ? 0 : seq - hourFirst + 1, day: dayFirst === undefined ? 0 : seq - dayFirst + 1 })
      // rows older than the day go, unless this process knows there are none: after its last delete for the key,
      // none below that day's first number was left, and the day's first number has not moved since (a hint only:
      // counts never depend on it, and the sweep removes whatever a wrong hint leaves)
      if (dayFirst === undefined || floors.get(key) !== dayFirst) {
        dropOld.run(key, nowMs - DAY_MS)
        floors.delete(key)
        if (dayFirst !== undefined) {
          if (floors.size >= MAX_FLOORS) floors.delete(floors.keys().next().value as string)
          floors.set(key, dayFirst)
        }
      }
    }
    if (++hits % SWEEP_EVERY === 0) purge(nowMs)
    return out
  })
  return {
    hit(keys, nowMs, checkId) {
      if (keys.length === 0) return []
      const at = Math.floor(nowMs)
      const id = checkId ?? null
      return groupWrite ? groupWrite(() => hit(keys, at, id)) : hit.immediate(keys, at, id)
    },
    purge,
  }
}
