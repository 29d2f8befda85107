/**
 * The session pool: at most `maxPerKey` sessions open (or being opened) per key — the SMTP source keys by route and
 * mail-server IP address, because receiving servers count connections per client IP against their own IP —, or the
 * lower limit learned for that key; a FIFO queue beyond that, idle sessions reused and closed after `idleMs`. A
 * session's slot is free again once its connection has closed (a server counts it until then). Generic over the
 * session, so it is tested against a fake one.
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
  /**
   * A lower limit for `key` (a server that refused an extra connection told us its own), or undefined; read at every
   * decision, so a limit that expires lets the key grow back to `maxPerKey`.
   */
  limitOf?: (key: string) => number | undefined
}

/** A pool of sessions per key. */
export interface SessionPool<S extends PoolableSession> {
  /** An idle session, a slot, or a place in the key's queue (left when `signal` aborts). */
  acquire(key: string, signal?: AbortSignal): Promise<Lease<S>>
  /** Registers a session opened on a slot of `key` as busy. */
  adopt(key: string, session: S): void
  /**
   * Gives a busy session back: to the next waiter, to the idle list, or closed when `retire`, dead or the pool is
   * closed (its slot is free once the connection has closed).
   */
  release(key: string, session: S, retire?: boolean): void
  /** Drops a busy session that failed (destroyed); its slot is free once the connection has closed. */
  discard(key: string, session: S, reason?: string): void
  /** Frees a slot whose session could not be opened: the next waiter gets it, unless the key is at its limit. */
  freeSlot(key: string): void
  /** Slots of `key` (sessions open, being opened or closing), idle sessions, and callers waiting. */
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

  const capOf = (key: string) => limitOf(options, key)

  /** Hands free slots to waiters, in order, while the key is under its limit. */
  function grant(key: string, st: KeyState<S>): void {
    while (!closed && st.waiters.length > 0 && st.slots < capOf(key)) {
      st.slots++
      st.waiters.shift()!({ kind: 'slot' })
    }
  }

  /** Frees `session`'s slot once its connection has closed. */
  function freeWhenClosed(key: string, session: S): void {
    void session.closed.then(() => pool.freeSlot(key))
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
      if (st.slots < capOf(key)) {
        st.slots++
        return Promise.resolve({ kind: 'slot' })
      }
      return waitInLine(st, signal, () => forget(key, st))
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
        freeWhenClosed(key, session)
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
          freeWhenClosed(key, session)
        }
      }, options.idleMs)
      timer.unref()
      idleTimers.set(session, timer)
    },

    discard(key, session, reason) {
      busy.delete(session)
      session.destroy(reason)
      freeWhenClosed(key, session)
    },

    freeSlot(key) {
      const st = stateOf(key)
      st.slots = Math.max(0, st.slots - 1)
      grant(key, st)
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
      for (const t of idleTimers.values()) clearTimeout(t)
      idleTimers.clear()
      const closing = closeAll(states.values(), busy.keys())
      busy.clear()
      states.clear()
      await Promise.all(closing)
    },
  }
  return pool
}

/** The most slots `key` may hold now: `maxPerKey`, or the lower limit learned for it (at least 1). */
function limitOf(options: SessionPoolOptions, key: string): number {
  const learned = options.limitOf?.(key)
  return learned === undefined ? options.maxPerKey : Math.max(1, Math.min(options.maxPerKey, learned))
}

/** A place at the end of `st`'s queue, left (calling `onLeave`) when `signal` aborts. */
function waitInLine<S>(st: KeyState<S>, signal: AbortSignal | undefined, onLeave: () => void): Promise<Lease<S>> {
  return new Promise<Lease<S>>((resolve) => {
    const onAbort = () => {
      const i = st.waiters.indexOf(waiter)
      if (i >= 0) st.waiters.splice(i, 1)
      onLeave()
      resolve({ kind: 'aborted' })
    }
    const waiter = (lease: Lease<S>) => {
      signal?.removeEventListener('abort', onAbort)
      resolve(lease)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    st.waiters.push(waiter)
  })
}

/** Closing the pool: waiters are told, idle sessions QUIT, busy ones destroyed; what settles when each has closed. */
function closeAll<S extends PoolableSession>(states: Iterable<KeyState<S>>, busy: Iterable<S>): Array<Promise<void>> {
  const closing: Array<Promise<void>> = []
  for (const st of states) {
    for (const w of st.waiters.splice(0)) w({ kind: 'closed' })
    for (const s of st.idle.splice(0)) {
      // An idle session is unref'd; while its QUIT completes it must keep the process alive, or a caller awaiting
      // close() with nothing else pending would see Node exit with the promise unsettled.
      s.setIdle(false)
      s.quit()
      closing.push(s.closed)
    }
  }
  for (const s of busy) {
    s.destroy('SMTP source closed')
    closing.push(s.closed)
  }
  return closing
}
