import { afterEach, describe, expect, it, vi } from 'vitest'
import { createSessionPool, type Lease, type PoolableSession, type SessionPool } from './pool.js'

/** A session with no connection: records what the pool did to it. */
class FakeSession implements PoolableSession {
  dead = false
  quits = 0
  destroys = 0
  idle = false
  readonly closed: Promise<void>
  private close!: () => void
  constructor(readonly name: string) {
    this.closed = new Promise((resolve) => (this.close = resolve))
  }
  quit() {
    this.quits++
    this.dead = true
    this.close()
  }
  destroy() {
    this.destroys++
    this.dead = true
    this.close()
  }
  setIdle(idle: boolean) {
    this.idle = idle
  }
  /** The server hangs up. */
  hangUp() {
    this.dead = true
    this.close()
  }
}

/** A session whose connection closes only when the test says so (the server answers QUIT a moment later). */
class SlowSession extends FakeSession {
  override quit() {
    this.quits++
    this.dead = true
  }
  override destroy() {
    this.destroys++
    this.dead = true
  }
  /** The connection has closed. */
  closeNow() {
    this.hangUp()
  }
}

const flush = () => new Promise((r) => setImmediate(r))

/** Takes a slot of `key` and opens a (fake) session on it. */
async function openOn(pool: SessionPool<FakeSession>, key: string, name = key): Promise<FakeSession> {
  expect(await pool.acquire(key)).toEqual({ kind: 'slot' })
  const s = new FakeSession(name)
  pool.adopt(key, s)
  return s
}

afterEach(() => {
  vi.useRealTimers()
})

describe('createSessionPool', () => {
  it('hands out at most maxPerKey slots per key, then queues callers in order', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 2, idleMs: 1_000 })
    expect(await pool.acquire('direct|192.0.2.1')).toEqual({ kind: 'slot' })
    expect(await pool.acquire('direct|192.0.2.1')).toEqual({ kind: 'slot' })
    const got: Array<Lease<FakeSession>> = []
    void pool.acquire('direct|192.0.2.1').then((l) => got.push(l))
    void pool.acquire('direct|192.0.2.1').then((l) => got.push(l))
    await flush()
    expect(got).toEqual([])
    expect(pool.counts('direct|192.0.2.1')).toEqual({ slots: 2, idle: 0, waiting: 2 })
    // another key (another server address, or the same one through a proxy) has its own limit
    expect(await pool.acquire('proxy0|192.0.2.1')).toEqual({ kind: 'slot' })

    const a = new FakeSession('a')
    pool.adopt('direct|192.0.2.1', a)
    pool.release('direct|192.0.2.1', a) // to the first waiter, not the idle list
    pool.freeSlot('direct|192.0.2.1') // the other slot's session could not be opened: its slot goes to the next waiter
    await flush()
    expect(got).toEqual([{ kind: 'reused', session: a }, { kind: 'slot' }])
    expect(pool.reused).toBe(1)
    expect(pool.counts('direct|192.0.2.1')).toEqual({ slots: 2, idle: 0, waiting: 0 })
  })

  it('reuses an idle session, unref-ing it while idle', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 1_000 })
    const s = await openOn(pool, 'k')
    pool.release('k', s)
    expect(s.idle).toBe(true)
    expect(await pool.acquire('k')).toEqual({ kind: 'reused', session: s })
    expect(s.idle).toBe(false)
  })

  it('retire (or a dead session) closes it on release and frees the slot', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 1_000 })
    const s = await openOn(pool, 'k')
    pool.release('k', s, true)
    expect(s.quits).toBe(1)
    expect(await pool.acquire('k')).toEqual({ kind: 'slot' })
  })

  it('discard destroys a failed session and passes its slot on', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 1_000 })
    const s = await openOn(pool, 'k')
    const next = pool.acquire('k')
    pool.discard('k', s)
    expect(s.destroys).toBe(1)
    expect(await next).toEqual({ kind: 'slot' })
  })

  it('a waiter whose signal aborts leaves the queue', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 1_000 })
    await pool.acquire('k')
    const ac = new AbortController()
    const waiting = pool.acquire('k', ac.signal)
    ac.abort()
    expect(await waiting).toEqual({ kind: 'aborted' })
    expect(pool.counts('k')).toEqual({ slots: 1, idle: 0, waiting: 0 })
    expect(await pool.acquire('k', ac.signal)).toEqual({ kind: 'aborted' })
  })

  it('an idle session is closed after idleMs, and its slot freed', async () => {
    vi.useFakeTimers()
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 500 })
    const s = await openOn(pool, 'k')
    pool.release('k', s)
    vi.advanceTimersByTime(499)
    expect(s.quits).toBe(0)
    vi.advanceTimersByTime(1)
    expect(s.quits).toBe(1)
    await s.closed // the slot is free once the connection has closed
    expect(pool.counts('k')).toEqual({ slots: 0, idle: 0, waiting: 0 })
  })

  it('a server hanging up on an idle session frees its slot at once', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 60_000 })
    const s = await openOn(pool, 'k')
    pool.release('k', s)
    s.hangUp()
    await flush()
    expect(pool.counts('k')).toEqual({ slots: 0, idle: 0, waiting: 0 })
    expect(await pool.acquire('k')).toEqual({ kind: 'slot' })
  })

  it('skips an idle session that died and opens a new slot instead', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 60_000 })
    const s = await openOn(pool, 'k')
    pool.release('k', s)
    s.dead = true // noticed before its close event
    expect(await pool.acquire('k')).toEqual({ kind: 'slot' })
    expect(s.destroys).toBe(1)
  })

  it('close(): waiters get closed, idle sessions QUIT (ref-ed first), busy ones are destroyed, and it waits for all', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 2, idleMs: 60_000 })
    await pool.acquire('k')
    await pool.acquire('k')
    const idle = new FakeSession('idle')
    const busy = new FakeSession('busy')
    pool.adopt('k', idle)
    pool.adopt('k', busy)
    pool.release('k', idle)
    const waiting = pool.acquire('k')
    // the idle session went to the waiter; make another one idle again
    const handed = await waiting
    expect(handed).toEqual({ kind: 'reused', session: idle })
    pool.release('k', idle)
    const queued = pool.acquire('x')
    await pool.close()
    expect(idle).toMatchObject({ quits: 1, idle: false })
    expect(busy.destroys).toBe(1)
    expect(await queued).toEqual({ kind: 'slot' }) // asked before close: a fresh key had room
    expect(await pool.acquire('k')).toEqual({ kind: 'closed' })
  })

  it('a retired or discarded session holds its slot until its connection has closed (the server counts it until then)', async () => {
    const pool = createSessionPool<SlowSession>({ maxPerKey: 1, idleMs: 60_000 })
    expect(await pool.acquire('k')).toEqual({ kind: 'slot' })
    const a = new SlowSession('a')
    pool.adopt('k', a)
    pool.release('k', a, true)
    const got: Array<Lease<SlowSession>> = []
    void pool.acquire('k').then((l) => got.push(l))
    await flush()
    expect(a.quits).toBe(1)
    expect(got).toEqual([])
    a.closeNow()
    await flush()
    expect(got).toEqual([{ kind: 'slot' }])
    const b = new SlowSession('b')
    pool.adopt('k', b)
    void pool.acquire('k').then((l) => got.push(l))
    pool.discard('k', b)
    await flush()
    expect(got).toHaveLength(1)
    b.closeNow()
    await flush()
    expect(got).toEqual([{ kind: 'slot' }, { kind: 'slot' }])
  })

  it('a lower limit learned for a key (limitOf) caps its slots; a freed slot over it goes to no waiter; it can grow back', async () => {
    const learned = new Map<string, number>()
    const pool = createSessionPool<FakeSession>({ maxPerKey: 3, idleMs: 60_000, limitOf: (key) => learned.get(key) })
    for (let i = 0; i < 3; i++) expect(await pool.acquire('k')).toEqual({ kind: 'slot' })
    const got: Array<Lease<FakeSession>> = []
    for (let i = 0; i < 3; i++) void pool.acquire('k').then((l) => got.push(l))
    await flush()
    // the server refused two of the three connections: its limit is 1
    learned.set('k', 1)
    pool.freeSlot('k')
    pool.freeSlot('k')
    await flush()
    expect(got).toEqual([])
    expect(pool.counts('k')).toEqual({ slots: 1, idle: 0, waiting: 3 })
    // the one session serves the waiters in turn
    const s = new FakeSession('s')
    pool.adopt('k', s)
    pool.release('k', s)
    await flush()
    expect(got).toEqual([{ kind: 'reused', session: s }])
    // the limit expired: the next freed slot lets the key grow back to maxPerKey at once
    learned.delete('k')
    pool.discard('k', s)
    await flush()
    expect(got).toEqual([{ kind: 'reused', session: s }, { kind: 'slot' }, { kind: 'slot' }])
    expect(pool.counts('k')).toEqual({ slots: 2, idle: 0, waiting: 0 })
    // a limit is never above maxPerKey, nor below 1
    learned.set('x', 10)
    for (let i = 0; i < 3; i++) expect(await pool.acquire('x')).toEqual({ kind: 'slot' })
    learned.set('y', 0)
    expect(await pool.acquire('y')).toEqual({ kind: 'slot' })
    const waiting = pool.acquire('y', AbortSignal.timeout(1))
    expect(await waiting).toEqual({ kind: 'aborted' })
  })

  it('close() tells queued callers the pool is closed', async () => {
    const pool = createSessionPool<FakeSession>({ maxPerKey: 1, idleMs: 60_000 })
    await pool.acquire('k')
    const waiting = pool.acquire('k')
    await pool.close()
    expect(await waiting).toEqual({ kind: 'closed' })
  })
})
