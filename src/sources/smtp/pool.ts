/**
 * The session pool: at most `maxPerKey` sessions open (or being opened) per key — the SMTP source keys by route and
 * mail-server IP address, because receiving servers count connections per client IP against their own IP —, a FIFO
 * queue beyond that, idle sessions reused and closed after `idleMs`. Generic over the session, so it is tested
 * against a fake one.
 */

/** What the pool needs of a session. */
export interface PoolableSession {
  readonly dead: boolean
  /** Closes politely (QUIT). */
  quit(): void
  /** Closes now. */
  destroy(reason?: string): void
  /** An idle session must not keep the process alive. */
  setIdle(idle: boolean): void
  /** Settles when the session's connection has closed. */
  readonly closed: Promise<void>
}

/** What {@link SessionPool.acquire} hands out. */
export type Lease<S> =
  /** an open idle session, now yours */
  | { kind: 'reused'; session: S }
  /** a free slot: open a session yourself, then adopt() it — or freeSlot() if opening failed */
  | { kind: 'slot' }
  /** the pool is closed */
  | { kind: 'closed' }
  /** the signal aborted while waiting */
  | { kind: 'aborted' }

/** Options of {@link createSessionPool}. */
export interface SessionPoolOptions {
  /** Most sessions open or being opened per key (≥ 1). */
  maxPerKey: number
  /** An idle session is closed (QUIT) after this many ms. */
  idleMs: number
}

/** A pool of sessions per key. */
export interface SessionPool<S extends PoolableSession> {
  /** An idle session, a slot, or a place in the key's queue (left when `signal` aborts). */
  acquire(key: string, signal?: AbortSignal): Promise<Lease<S>>
  /** Registers a session opened on a slot of `key` as busy. */
  adopt(key: string, session: S): void
  /** Gives a busy session back: to the next waiter, to the idle list, or closed when `retire`, dead or the pool is closed. */
  release(key: string, session: S, retire?: boolean): void
  /** Drops a busy session that failed (destroyed) and frees its slot. */
  discard(key: string, session: S, reason?: string): void
  /** Frees a slot whose session could not be opened. */
  freeSlot(key: string): void
  /** Sessions open or being opened for `key`, and callers waiting. */
  counts(key: string): { slots: number; idle: number; waiting: number }
  /** Times an open session served another caller. */
  readonly reused: number
  /** Refuses waiters, QUITs idle sessions, destroys busy ones; settles when all of them have closed. */
  close(): Promise<void>
}

interface KeyState<S> {
  idle: S[]
  slots: number
  waiters: Array<(lease: Lease<S>) => void>
}

/**
 * Creates a session pool.
 *
 * @example
 * const pool = createSessionPool<SmtpSession>({ maxPerKey: 2, idleMs: 10_000 })
 * const lease = await pool.acquire('direct|192.0.2.25')
 * if (lease.kind === 'slot') { const s = await open(); pool.adopt('direct|192.0.2.25', s); … pool.release('direct|192.0.2.25', s) }
 */
export function createSessionPool<S extends PoolableSession>(options: SessionPoolOptions): SessionPool<S> {
  const states = new Map<string, KeyState<S>>()
  const busy = new Map<S, string>()
  const idleTimers = new Map<S, NodeJS.Timeout>()
  let reused = 0
  let closed = false

  function stateOf(key: string): KeyState<S> {
    let st = states.get(key)
    if (!st) {
      st = { idle: [], slots: 0, waiters: [] }
      states.set(key, st)
    }
    return st
  }

  function forget(key: string, st: KeyState<S>): void {
    if (st.slots === 0 && st.waiters.length === 0 && st.idle.length === 0) states.delete(key)
  }

  function clearIdleTimer(s: S): void {
    const t = idleTimers.get(s)
    if (t) clearTimeout(t)
    idleTimers.delete(s)
  }

  function takeIdle(key: string, st: KeyState<S>, s: S): boolean {
    const i = st.idle.indexOf(s)
    if (i < 0) return false
    st.idle.splice(i, 1)
    clearIdleTimer(s)
    return true
  }

  const pool: SessionPool<S> = {
    acquire(key, signal) {
      if (closed) return Promise.resolve({ kind: 'closed' })
      if (signal?.aborted) return Promise.resolve({ kind: 'aborted' })
      const st = stateOf(key)
      for (;;) {
        const s = st.idle.pop()
        if (!s) break
        clearIdleTimer(s)
        if (s.dead) {
          s.destroy()
          st.slots--
          continue
        }
        s.setIdle(false)
        busy.set(s, key)
        reused++
        return Promise.resolve({ kind: 'reused', session: s })
      }
      if (st.slots < options.maxPerKey) {
        st.slots++
        return Promise.resolve({ kind: 'slot' })
      }
      return new Promise<Lease<S>>((resolve) => {
        const onAbort = () => {
          const i = st.waiters.indexOf(waiter)
          if (i >= 0) st.waiters.splice(i, 1)
          forget(key, st)
          resolve({ kind: 'aborted' })
        }
        const waiter = (lease: Lease<S>) => {
          signal?.removeEventListener('abort', onAbort)
          resolve(lease)
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        st.waiters.push(waiter)
      })
    },

    adopt(key, session) {
      busy.set(session, key)
      // A server that hangs up on an idle session frees its slot at once.
      session.closed.then(() => {
        const st = states.get(key)
        if (st && takeIdle(key, st, session)) pool.freeSlot(key)
      })
    },

    release(key, session, retire = false) {
      busy.delete(session)
      const st = stateOf(key)
      if (closed || retire || session.dead) {
        session.quit()
        pool.freeSlot(key)
        return
      }
      const waiter = st.waiters.shift()
      if (waiter) {
        busy.set(session, key)
        reused++
        waiter({ kind: 'reused', session })
        return
      }
      st.idle.push(session)
      session.setIdle(true)
      const timer = setTimeout(() => {
        if (takeIdle(key, st, session)) {
          session.quit()
          pool.freeSlot(key)
        }
      }, options.idleMs)
      timer.unref()
      idleTimers.set(session, timer)
    },

    discard(key, session, reason) {
      busy.delete(session)
      session.destroy(reason)
      pool.freeSlot(key)
    },

    freeSlot(key) {
      const st = stateOf(key)
      const waiter = st.waiters.shift()
      if (waiter && !closed) {
        waiter({ kind: 'slot' })
        return
      }
      st.slots = Math.max(0, st.slots - 1)
      forget(key, st)
    },

    counts(key) {
      const st = states.get(key)
      return { slots: st?.slots ?? 0, idle: st?.idle.length ?? 0, waiting: st?.waiters.length ?? 0 }
    },

    get reused() {
      return reused
    },

    async close() {
      closed = true
      const closing: Array<Promise<void>> = []
      for (const st of states.values()) {
        for (const w of st.waiters.splice(0)) w({ kind: 'closed' })
        for (const s of st.idle.splice(0)) {
          clearIdleTimer(s)
          // An idle session is unref'd; while its QUIT completes it must keep the process alive, or a caller awaiting
          // close() with nothing else pending would see Node exit with the promise unsettled.
          s.setIdle(false)
          s.quit()
          closing.push(s.closed)
        }
      }
      for (const s of busy.keys()) {
        s.destroy('SMTP source closed')
        closing.push(s.closed)
      }
      busy.clear()
      states.clear()
      await Promise.all(closing)
    },
  }
  return pool
}
