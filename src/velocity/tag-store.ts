/**
 * The velocity counter's own in-memory store: the exact sliding windows and the forgetting of the string-keyed memory
 * store (./store.ts), keyed by 64-bit tags (two 32-bit words) rather than strings, in typed arrays — no string, log
 * object or array per key (docs/decisions.md, "Lists and velocity" → "velocity in memory").
 */
import { DAY_MS, HOUR_MS, type WindowCount } from './store.js'

/** First index in [lo, hi) of the sorted `times` whose time is after `t` (hi when none). */
function after(times: Float64Array, lo: number, hi: number, t: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((times[mid] as number) > t) hi = mid
    else lo = mid + 1
  }
  return lo
}

/** Bits of a table slot: the record (+ 1), and the bits of the tag's second word that spare most records a read. */
const RBITS = 22
const RMASK = (1 << RBITS) - 1
/** A slot whose key was forgotten: probes go on past it; an added key may take it. Record + 1 never reaches it. */
const TOMB = RMASK
/** The most keys a store holds: records (a check's new keys may add a few beyond it until {@link TagStore.evict}) stay below TOMB - 1. */
const MAX_KEYS = 2_000_000

/** ArrayBuffer's constructor with the resizable form (ES2024; Node 20 has it, the TypeScript lib in use does not). */
type Resizable = new (length: number, options: { maxByteLength: number }) => ArrayBuffer

const grown = <A extends Int32Array | Float64Array>(a: A, size: number): A => {
  const b = new (a.constructor as new (n: number) => A)(size)
  b.set(a)
  return b
}

/** Int32 slots of a record (40 bytes): tag words 0–1, then the fields below; REFS: its checks in the queue (0: free). */
const REC = 10
const START = 2
const CAP = 3
const LEN = 4
const HEAD = 5
const REFS = 6
/** Float64 slot (of five per record): the newest time. */
const F64 = REC / 2
const NEWEST = 4

/**
 * Keys are records (numbers reused once a key is forgotten) found through an open-addressing table by their tag; a
 * record's check times are one block of a shared pool of times, sorted, from its `head` (the first still within the
 * day), in blocks of 4, 8, 16 … entries; a key checked once keeps its one time in the record (no block). A record's
 * fields share one buffer (one read, not one per field). Call {@link TagStore.evict} after each check's tags.
 */
export class TagStore {
  /** Keys held. */
  size = 0
  /** Records, in a buffer that grows in place up to room for the most keys (a page of memory is written once, not copied at each doubling). */
  private i32: Int32Array
  private f64: Float64Array
  private records = 0
  private readonly freeRecords: number[] = []
  /**
   * By slot: record + 1 in the low RBITS bits, the top 32 − RBITS bits of the tag's second word above them (0: empty, TOMB:
   * a forgotten key's slot); the slot of a tag is its first word, masked, then the next free one. 4 bytes a slot, at most
   * three quarters of the slots in use: a probe reads a record only when those bits match.
   */
  private table = new Int32Array(1024)
  /** Slots holding TOMB. */
  private tombs = 0
  private pool = new Float64Array(4096)
  private poolTop = 0
  /** Freed blocks, by log2 of their size. */
  private readonly freeBlocks: number[][] = []
  /**
   * Every check's record, oldest first: the front entry whose record has no later one queued (REFS 1) is the key
   * checked least recently (as in ./store.ts).
   */
  private qRecord = new Int32Array(1024)
  private qHead = 0
  private qTail = 0

  constructor(private readonly maxKeys = 1_000_000) {
    if (!(maxKeys >= 1 && maxKeys <= MAX_KEYS)) throw new RangeError(`TagStore holds 1 to ${MAX_KEYS} keys`)
    const buffer = new (ArrayBuffer as Resizable)(REC * 4 * 256, { maxByteLength: REC * 4 * (maxKeys + 256) })
    this.i32 = new Int32Array(buffer)
    this.f64 = new Float64Array(buffer)
  }

  /** Records one check at `now` under the tag `w0 w1` and answers its counts; call {@link evict} after a check's tags. */
  hit(w0: number, w1: number, now: number): WindowCount {
    let r = this.find(w0, w1)
    if (r < 0) {
      // a key's first check: its one time is its newest, kept in the record (no block of the pool yet)
      r = this.add(w0, w1)
      this.i32[r * REC + LEN] = 1
      this.f64[r * F64 + NEWEST] = now
      this.enqueue(r)
      return { hour: 1, day: 1 }
    }
    this.record(r, now)
    this.enqueue(r)
    const i32 = this.i32
    const b = r * REC
    const s = i32[b + START] as number
    const end = s + (i32[b + LEN] as number)
    const dayFrom = after(this.pool, s + (i32[b + HEAD] as number), end, now - DAY_MS)
    i32[b + HEAD] = dayFrom - s
    const counts = { hour: end - after(this.pool, dayFrom, end, now - HOUR_MS), day: end - dayFrom }
    this.compact(r)
    return counts
  }

  /** The counts of the tag `w0 w1` at `now`, without recording a check (0 and 0 for a key not held). */
  peek(w0: number, w1: number, now: number): WindowCount {
    const r = this.find(w0, w1)
    if (r < 0) return { hour: 0, day: 0 }
    const i32 = this.i32
    const b = r * REC
    if (i32[b + CAP] === 0) {
      // checked once: its one time is in the record
      const t = this.f64[r * F64 + NEWEST] as number
      return { hour: t > now - HOUR_MS ? 1 : 0, day: t > now - DAY_MS ? 1 : 0 }
    }
    const s = i32[b + START] as number
    const end = s + (i32[b + LEN] as number)
    const dayFrom = after(this.pool, s + (i32[b + HEAD] as number), end, now - DAY_MS)
    return { hour: end - after(this.pool, dayFrom, end, now - HOUR_MS), day: end - dayFrom }
  }

  /**
   * Reads the table slots of the first `n` tags of `tags` (two words each) ahead of their {@link hit}s: these reads do
   * not wait for one another, so their cache misses overlap, where the hits' own reads would each wait for the
   * previous hit. Answers what it read (callers drop it).
   */
  readAhead(tags: Int32Array, n: number): number {
    const t = this.table
    const mask = t.length - 1
    let x = 0
    for (let k = 0; k < n; k++) x |= t[(tags[2 * k] as number) & mask] as number
    return x
  }

  /** {@link hit} of the `i`-th tag of `tags` (two words each, as {@link readAhead} reads them). */
  hitAt(tags: Int32Array, i: number, now: number): WindowCount {
    return this.hit(tags[2 * i] as number, tags[2 * i + 1] as number, now)
  }

  /** Forgets the keys whose last check left the day window, and the least recently checked beyond the most keys. */
  evict(now: number): void {
    while (this.qHead < this.qTail) {
      const r = this.qRecord[this.qHead] as number
      const refs = this.i32[r * REC + REFS] as number
      if (refs > 1) this.i32[r * REC + REFS] = refs - 1 // a later check of the key is queued
      else {
        if (this.size <= this.maxKeys && (this.f64[r * F64 + NEWEST] as number) > now - DAY_MS) break
        this.remove(r)
      }
      this.qHead++
    }
  }

  private find(w0: number, w1: number): number {
    const t = this.table
    const mask = t.length - 1
    const f = w1 >>> RBITS
    const w = this.i32
    for (let i = w0 & mask; ; i = (i + 1) & mask) {
      const e = t[i] as number
      if (e === 0) return -1
      if (e >>> RBITS !== f || e === TOMB) continue
      const b = ((e & RMASK) - 1) * REC
      if (w[b] === w0 && w[b + 1] === w1) return (e & RMASK) - 1
    }
  }

  private add(w0: number, w1: number): number {
    // at most three quarters of the slots in use (keys and TOMBs): a table twice as large once the keys alone fill half
    const slots = this.table.length
    if ((this.size + this.tombs + 1) * 4 > slots * 3) this.rehash((this.size + 1) * 2 > slots ? slots * 2 : slots)
    let r = this.freeRecords.pop()
    if (r === undefined) {
      if (this.records + 2 >= TOMB) throw new RangeError('TagStore: too many keys between evictions')
      if ((this.records + 1) * REC > this.i32.length) this.growRecords()
      r = this.records++
    }
    const w = this.i32
    const b = r * REC
    w[b] = w0
    w[b + 1] = w1
    w[b + CAP] = 0
    w[b + LEN] = 0
    w[b + HEAD] = 0
    this.place(w0, w1, r)
    this.size++
    return r
  }

  /** Puts record `r` in the first empty or TOMB slot from its tag's. */
  private place(w0: number, w1: number, r: number): void {
    const t = this.table
    const mask = t.length - 1
    let i = w0 & mask
    while (t[i] !== 0 && t[i] !== TOMB) i = (i + 1) & mask
    if (t[i] === TOMB) this.tombs--
    t[i] = ((w1 >>> RBITS) << RBITS) | (r + 1)
  }

  /** A table of `slots` slots holding every held record (read in record order: one pass over them, not a probe each), no TOMB. */
  private rehash(slots: number): void {
    if (slots === this.table.length) this.table.fill(0)
    else this.table = new Int32Array(slots)
    this.tombs = 0
    const w = this.i32
    for (let r = 0; r < this.records; r++) if ((w[r * REC + REFS] as number) > 0) this.place(w[r * REC] as number, w[r * REC + 1] as number, r)
  }

  /** Takes record `r` out of the table (its slot becomes empty when the next one is, else TOMB), frees it. */
  private remove(r: number): void {
    const t = this.table
    const mask = t.length - 1
    const b = r * REC
    let i = (this.i32[b] as number) & mask
    while (((t[i] as number) & RMASK) !== r + 1) {
      if (t[i] === 0) throw new Error(`TagStore: record ${r} is not in its table`) // never: a held record is placed
      i = (i + 1) & mask
    }
    if (t[(i + 1) & mask] === 0) t[i] = 0
    else {
      t[i] = TOMB
      this.tombs++
    }
    const cap = this.i32[b + CAP] as number
    if (cap > 0) this.freeBlock(this.i32[b + START] as number, cap)
    this.i32[b + CAP] = 0
    this.i32[b + LEN] = 0
    this.i32[b + REFS] = 0
    this.freeRecords.push(r)
    this.size--
  }

  /** Adds `t` to the record's times, in order (a clock stepping back inserts it, and the day window restarts). */
  private record(r: number, t: number): void {
    const b = r * REC
    const n = this.i32[b + LEN] as number
    if (this.i32[b + CAP] === 0) {
      // the second check: the first time moves from the record to a block
      const at = this.allocBlock(4)
      this.pool[at] = this.f64[r * F64 + NEWEST] as number
      this.i32[b + START] = at
      this.i32[b + CAP] = 4
    } else if (n === this.i32[b + CAP]) this.growBlock(r)
    const s = this.i32[b + START] as number
    const p = this.pool
    if (t >= (this.f64[r * F64 + NEWEST] as number)) {
      p[s + n] = t
      this.f64[r * F64 + NEWEST] = t
    } else {
      this.i32[b + HEAD] = 0
      const at = after(p, s, s + n, t)
      p.copyWithin(at + 1, at, s + n)
      p[at] = t
    }
    this.i32[b + LEN] = n + 1
  }

  /** Drops the times that left the day window once they are many (as the string-keyed store does). */
  private compact(r: number): void {
    const b = r * REC
    const h = this.i32[b + HEAD] as number
    const n = this.i32[b + LEN] as number
    if (h < 64 || h * 2 < n) return
    const s = this.i32[b + START] as number
    this.pool.copyWithin(s, s + h, s + n)
    this.i32[b + LEN] = n - h
    this.i32[b + HEAD] = 0
  }

  private growBlock(r: number): void {
    const b = r * REC
    const cap = this.i32[b + CAP] as number
    const next = cap * 2
    const at = this.allocBlock(next)
    const s = this.i32[b + START] as number
    this.pool.copyWithin(at, s, s + (this.i32[b + LEN] as number))
    this.freeBlock(s, cap)
    this.i32[b + START] = at
    this.i32[b + CAP] = next
  }

  private allocBlock(size: number): number {
    const free = this.freeBlocks[31 - Math.clz32(size)]
    if (free !== undefined && free.length > 0) return free.pop() as number
    if (this.poolTop + size > this.pool.length) this.pool = grown(this.pool, Math.max(this.pool.length * 2, this.poolTop + size))
    const at = this.poolTop
    this.poolTop += size
    return at
  }

  private freeBlock(at: number, size: number): void {
    ;(this.freeBlocks[31 - Math.clz32(size)] ??= []).push(at)
  }

  private growRecords(): void {
    const buffer = this.i32.buffer as ArrayBuffer & { maxByteLength: number; resize(n: number): void }
    if (buffer.byteLength < buffer.maxByteLength) {
      // in place; the views track the buffer's length
      buffer.resize(Math.min(buffer.byteLength * 2, buffer.maxByteLength))
      return
    }
    // beyond the room (more keys between two evictions than the margin): a copy, as any typed array grows
    this.i32 = grown(this.i32, this.i32.length * 2)
    this.f64 = new Float64Array(this.i32.buffer)
  }

  /** Queues a check of record `r`. */
  private enqueue(r: number): void {
    if (this.qTail === this.qRecord.length) {
      if (this.qHead * 2 >= this.qTail) {
        // most of the queue was consumed: move the rest to the front
        this.qRecord.copyWithin(0, this.qHead, this.qTail)
        this.qTail -= this.qHead
        this.qHead = 0
      } else this.qRecord = grown(this.qRecord, this.qRecord.length * 2)
    }
    this.qRecord[this.qTail++] = r
    this.i32[r * REC + REFS] = (this.i32[r * REC + REFS] as number) + 1
  }
}
