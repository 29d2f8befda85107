/**
 * Velocity counts in the SQLite file (migration 006): one row per check and keyed hash, with its time in ms. A hit
 * is one IMMEDIATE transaction that inserts the check's rows and counts each key's rows of the hour and the day, so
 * every server process on the file counts exactly (one writer at a time; each sees every check committed before its
 * own). Rows of a key older than the day are deleted when the key is checked again, and others in small batches
 * every few hits, so the table holds about the last 24 hours of checks.
 */
import type Database from 'better-sqlite3'
import { DAY_MS, HOUR_MS, type WindowCount } from '../../../velocity/store.js'
import type { ServerVelocityStore } from '../contracts/velocity.js'

/** Hits between two sweeps of expired rows of keys not checked again. */
const SWEEP_EVERY = 128
/** Most rows one sweep deletes (a sweep stays short inside a request's transaction). */
const SWEEP_LIMIT = 1000

/** The velocity store of the SQLite store's database `db` (migrated). */
export function createSqliteVelocityStore(db: Database.Database): ServerVelocityStore {
  const insert = db.prepare('INSERT INTO velocity_hits (key, at) VALUES (?, ?)')
  const dropOld = db.prepare('DELETE FROM velocity_hits WHERE key = ? AND at <= ?')
  const count = db.prepare('SELECT COUNT(*) AS day, COUNT(*) FILTER (WHERE at > ?) AS hour FROM velocity_hits WHERE key = ? AND at > ?')
  const sweep = db.prepare('DELETE FROM velocity_hits WHERE rowid IN (SELECT rowid FROM velocity_hits WHERE at <= ? LIMIT ?)')
  let hits = 0
  const purge = (nowMs: number, limit = SWEEP_LIMIT): number => sweep.run(nowMs - DAY_MS, limit).changes
  const hit = db.transaction((keys: readonly string[], nowMs: number): WindowCount[] => {
    const out: WindowCount[] = []
    const dayStart = nowMs - DAY_MS
    for (const key of keys) {
      dropOld.run(key, dayStart)
      insert.run(key, nowMs)
      const row = count.get(nowMs - HOUR_MS, key, dayStart) as { day: number; hour: number }
      out.push({ hour: row.hour, day: row.day })
    }
    if (++hits % SWEEP_EVERY === 0) purge(nowMs)
    return out
  })
  return {
    hit: (keys, nowMs) => (keys.length === 0 ? [] : hit.immediate(keys, Math.floor(nowMs))),
    purge,
  }
}
