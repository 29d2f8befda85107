/**
 * The velocity counter store of a server: the library's store (src/velocity/store.ts: `hit(keys, nowMs)` records a
 * check under each keyed hash and answers its hour and day counts) plus the deletion of what left the day window.
 */
import type { VelocityStore } from '../../../velocity/store.js'

/** A velocity store kept in the server's database. */
export interface ServerVelocityStore extends VelocityStore {
  /** Deletes the records older than the day window before `nowMs` (at most `limit`); returns how many. */
  purge(nowMs: number, limit?: number): number | Promise<number>
}
