/**
 * The velocity counter's own in-memory store: the exact sliding windows and the forgetting of the string-keyed memory
 * store (./store.ts), keyed by 128-bit tags (four 32-bit words) rather than strings, in typed arrays —
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

/**
 * Keys are records (numbers reused once a key is forgotten) found through an open-addressing table by their tag; a
 * record's check times are one block of a shared pool of times, sorted, from its `head` (the first still within the
 * day), in blocks of 4, 8, 16 … entries.
 */
export class TagStore {
  /** Keys held. */
  size = 0
  private words = new Int32Array(4 * 256)
  private start = new Int32Array(256)
  private cap = new Int32Array(256)
  private len = new Int32Array(256)
  private head = new Int32Array(256)
  /** Number of the record's latest check; -1 once forgotten. */
  private last = new Float64Array(256)
  private records = 0
  private readonly freeRecords: number[] = []
  /** Record + 1 by slot (0: empty); the slot of a tag is its first word, masked, then the next free one. */
  private table = new Int32Array(512)
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
    if (r < 0) r = this.add(w0, w1, w2, w3)
    this.record(r, now)
    this.last[r] = ++this.seq
    this.enqueue(r, this.seq)
    const s = this.start[r] as number
    const end = s + (this.len[r] as number)
    const dayFrom = after(this.pool, s + (this.head[r] as number), end, now - DAY_MS)
    this.head[r] = dayFrom - s
    const counts = { hour: end - after(this.pool, dayFrom, end, now - HOUR_MS), day: end - dayFrom }
    this.compact(r)
    return counts
  }

  /** Forgets the keys whose last check left the day window, and the least recently checked beyond the most keys. */
  evict(now: number): void {
    while (this.qHead < this.qTail) {
      const r = this.qRecord[this.qHead] as number
      if (this.last[r] === this.qSeq[this.qHead]) {
        const newest = this.pool[(this.start[r] as number) + (this.len[r] as number) - 1] as number
        if (this.size <= this.maxKeys && newest > now - DAY_MS) break
        this.remove(r)
      }
      this.qHead++
    }
  }

  private find(w0: number, w1: number, w2: number, w3: number): number {
    const t = this.table
    const mask = t.length - 1
    const w = this.words
    for (let i = w0 & mask; ; i = (i + 1) & mask) {
      const e = t[i] as number
      if (e === 0) return -1
      const b = (e - 1) * 4
      if (w[b] === w0 && w[b + 1] === w1 && w[b + 2] === w2 && w[b + 3] === w3) return e - 1
    }
  }

  private add(w0: number, w1: number, w2: number, w3: number): number {
    let r = this.freeRecords.pop()
    if (r === undefined) {
      if (this.records === this.last.length) this.growRecords()
      r = this.records++
    }
    const b = r * 4
    this.words[b] = w0
    this.words[b + 1] = w1
    this.words[b + 2] = w2
    this.words[b + 3] = w3
    this.cap[r] = 0
    this.len[r] = 0
    this.head[r] = 0
    if ((this.size + 1) * 2 > this.table.length) this.rehash(this.table.length * 2)
    this.place(r)
    this.size++
    return r
  }

  private place(r: number): void {
    const t = this.table
    const mask = t.length - 1
    let i = (this.words[r * 4] as number) & mask
    while (t[i] !== 0) i = (i + 1) & mask
    t[i] = r + 1
  }

  private rehash(size: number): void {
    const old = this.table
    this.table = new Int32Array(size)
    for (let i = 0; i < old.length; i++) if (old[i] !== 0) this.place((old[i] as number) - 1)
  }

  /** Takes record `r` out of the table (moving back the entries after it that belong before the hole), frees it. */
  private remove(r: number): void {
    const t = this.table
    const mask = t.length - 1
    let hole = (this.words[r * 4] as number) & mask
    while (t[hole] !== r + 1) hole = (hole + 1) & mask
    t[hole] = 0
    for (let j = (hole + 1) & mask; t[j] !== 0; j = (j + 1) & mask) {
      const home = (this.words[((t[j] as number) - 1) * 4] as number) & mask
      const between = hole <= j ? hole < home && home <= j : hole < home || home <= j
      if (between) continue
      t[hole] = t[j] as number
      t[j] = 0
      hole = j
    }
    if ((this.cap[r] as number) > 0) this.freeBlock(this.start[r] as number, this.cap[r] as number)
    this.cap[r] = 0
    this.len[r] = 0
    this.last[r] = -1
    this.freeRecords.push(r)
    this.size--
  }

  /** Adds `t` to the record's times, in order (a clock stepping back inserts it, and the day window restarts). */
  private record(r: number, t: number): void {
    const n = this.len[r] as number
    if (n === this.cap[r]) this.growBlock(r)
    const s = this.start[r] as number
    const p = this.pool
    if (n === 0 || t >= (p[s + n - 1] as number)) p[s + n] = t
    else {
      this.head[r] = 0
      const at = after(p, s, s + n, t)
      p.copyWithin(at + 1, at, s + n)
      p[at] = t
    }
    this.len[r] = n + 1
  }

  /** Drops the times that left the day window once they are many (as the string-keyed store does). */
  private compact(r: number): void {
    const h = this.head[r] as number
    const n = this.len[r] as number
    if (h < 64 || h * 2 < n) return
    const s = this.start[r] as number
    this.pool.copyWithin(s, s + h, s + n)
    this.len[r] = n - h
    this.head[r] = 0
  }

  private growBlock(r: number): void {
    const cap = this.cap[r] as number
    const next = cap === 0 ? 4 : cap * 2
    const at = this.allocBlock(next)
    if (cap > 0) {
      const s = this.start[r] as number
      this.pool.copyWithin(at, s, s + (this.len[r] as number))
      this.freeBlock(s, cap)
    }
    this.start[r] = at
    this.cap[r] = next
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
    const n = this.last.length * 2
    this.words = grown(this.words, n * 4)
    this.start = grown(this.start, n)
    this.cap = grown(this.cap, n)
    this.len = grown(this.len, n)
    this.head = grown(this.head, n)
    this.last = grown(this.last, n)
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
