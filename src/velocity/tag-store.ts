/**
 * The velocity counter's own in-memory store: the exact sliding windows and the forgetting of the string-keyed memory
 * store (./store.ts), keyed by tags of up to 128 bits (four 32-bit words; the counter's are 64-bit) rather than strings, in typed arrays —
 * no string, log object or array per key (docs/decisions.md, "Lists and velocity" → "velocity in memory").
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

const grown = <A extends Int32Array | Float64Array>(a: A, size: number): A => {
  const b = new (a.constructor as new (n: number) => A)(size)
  b.set(a)
  return b
}

/** Int32 slots of a record (48 bytes, most often one cache line): tag words 0–3, then the fields below. */
const REC = 12
const START = 4
const CAP = 5
const LEN = 6
const HEAD = 7
/** Float64 slots (of six per record): the number of the record's latest check (-1 once forgotten), its newest time. */
const LAST = 4
const NEWEST = 5

/**
 * Keys are records (numbers reused once a key is forgotten) found through an open-addressing table by their tag; a
 * record's check times are one block of a shared pool of times, sorted, from its `head` (the first still within the
 * day), in blocks of 4, 8, 16 … entries; a key checked once keeps its one time in the record (no block). A record's fields share one buffer (one cache line to read, not one per
 * field), and the table holds each tag's first word beside its record, so a probe reads no record it does not want.
 */
export class TagStore {
  /** Keys held. */
  size = 0
  private i32 = new Int32Array(REC * 256)
  private f64 = new Float64Array(this.i32.buffer)
  private records = 0
  private readonly freeRecords: number[] = []
  /** By slot: the tag's first word, then record + 1 (0: empty); the slot of a tag is its first word, masked, then the next free one. */
  private table = new Int32Array(2 * 512)
  private pool = new Float64Array(4096)
  private poolTop = 0
  /** Freed blocks, by log2 of their size. */
  private readonly freeBlocks: number[][] = []
  /** Every check's record and number, oldest first: the front is the key checked least recently (as in ./store.ts). */
  private qRecord = new Int32Array(1024)
  private qSeq = new Float64Array(1024)
  private qHead = 0
  private qTail = 0
  private seq = 0

  constructor(private readonly maxKeys = 1_000_000) {}

  /** Records one check at `now` under the tag `w0 … w3` and answers its counts; call {@link evict} after a check's tags. */
  hit(w0: number, w1: number, w2: number, w3: number, now: number): WindowCount {
    let r = this.find(w0, w1, w2, w3)
    const seq = ++this.seq
    if (r < 0) {
      // a key's first check: its one time is its newest, kept in the record (no block of the pool yet)
      r = this.add(w0, w1, w2, w3)
      this.i32[r * REC + LEN] = 1
      this.f64[r * 6 + NEWEST] = now
      this.f64[r * 6 + LAST] = seq
      this.enqueue(r, seq)
      return { hour: 1, day: 1 }
    }
    this.record(r, now)
    this.f64[r * 6 + LAST] = seq
    this.enqueue(r, seq)
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

  /** Forgets the keys whose last check left the day window, and the least recently checked beyond the most keys. */
  evict(now: number): void {
    while (this.qHead < this.qTail) {
      const r = this.qRecord[this.qHead] as number
      if (this.f64[r * 6 + LAST] === this.qSeq[this.qHead]) {
        if (this.size <= this.maxKeys && (this.f64[r * 6 + NEWEST] as number) > now - DAY_MS) break
        this.remove(r)
      }
      this.qHead++
    }
  }

  private find(w0: number, w1: number, w2: number, w3: number): number {
    const t = this.table
    const mask = (t.length >>> 1) - 1
    const w = this.i32
    for (let i = w0 & mask; ; i = (i + 1) & mask) {
      const e = t[2 * i + 1] as number
      if (e === 0) return -1
      if (t[2 * i] !== w0) continue
      const b = (e - 1) * REC
      if (w[b + 1] === w1 && w[b + 2] === w2 && w[b + 3] === w3) return e - 1
    }
  }

  private add(w0: number, w1: number, w2: number, w3: number): number {
    let r = this.freeRecords.pop()
    if (r === undefined) {
      if ((this.records + 1) * REC > this.i32.length) this.growRecords()
      r = this.records++
    }
    const w = this.i32
    const b = r * REC
    w[b] = w0
    w[b + 1] = w1
    w[b + 2] = w2
    w[b + 3] = w3
    w[b + CAP] = 0
    w[b + LEN] = 0
    w[b + HEAD] = 0
    if ((this.size + 1) * 4 > this.table.length) this.rehash(this.table.length * 2)
    this.place(w0, r)
    this.size++
    return r
  }

  private place(w0: number, r: number): void {
    const t = this.table
    const mask = (t.length >>> 1) - 1
    let i = w0 & mask
    while (t[2 * i + 1] !== 0) i = (i + 1) & mask
    t[2 * i] = w0
    t[2 * i + 1] = r + 1
  }

  private rehash(size: number): void {
    const old = this.table
    this.table = new Int32Array(size)
    for (let i = 1; i < old.length; i += 2) if (old[i] !== 0) this.place(old[i - 1] as number, (old[i] as number) - 1)
  }

  /** Takes record `r` out of the table (moving back the entries after it that belong before the hole), frees it. */
  private remove(r: number): void {
    const t = this.table
    const mask = (t.length >>> 1) - 1
    const b = r * REC
    let hole = (this.i32[b] as number) & mask
    while (t[2 * hole + 1] !== r + 1) hole = (hole + 1) & mask
    t[2 * hole + 1] = 0
    for (let j = (hole + 1) & mask; t[2 * j + 1] !== 0; j = (j + 1) & mask) {
      const home = (t[2 * j] as number) & mask
      const between = hole <= j ? hole < home && home <= j : hole < home || home <= j
      if (between) continue
      t[2 * hole] = t[2 * j] as number
      t[2 * hole + 1] = t[2 * j + 1] as number
      t[2 * j + 1] = 0
      hole = j
    }
    const cap = this.i32[b + CAP] as number
    if (cap > 0) this.freeBlock(this.i32[b + START] as number, cap)
    this.i32[b + CAP] = 0
    this.i32[b + LEN] = 0
    this.f64[r * 6 + LAST] = -1
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
      this.pool[at] = this.f64[r * 6 + NEWEST] as number
      this.i32[b + START] = at
      this.i32[b + CAP] = 4
    } else if (n === this.i32[b + CAP]) this.growBlock(r)
    const s = this.i32[b + START] as number
    const p = this.pool
    if (t >= (this.f64[r * 6 + NEWEST] as number)) {
      p[s + n] = t
      this.f64[r * 6 + NEWEST] = t
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
    this.i32 = grown(this.i32, this.i32.length * 2)
    this.f64 = new Float64Array(this.i32.buffer)
  }

  private enqueue(r: number, seq: number): void {
    if (this.qTail === this.qRecord.length) {
      if (this.qHead * 2 >= this.qTail) {
        // most of the queue was consumed: move the rest to the front
        this.qRecord.copyWithin(0, this.qHead, this.qTail)
        this.qSeq.copyWithin(0, this.qHead, this.qTail)
        this.qTail -= this.qHead
        this.qHead = 0
      } else {
        this.qRecord = grown(this.qRecord, this.qRecord.length * 2)
        this.qSeq = grown(this.qSeq, this.qSeq.length * 2)
      }
    }
    this.qRecord[this.qTail] = r
    this.qSeq[this.qTail++] = seq
  }
}
