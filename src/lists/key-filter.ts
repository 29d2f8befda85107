/**
 * A membership filter in front of a list index's hash maps: a blocked Bloom filter, two bits in one 64-byte block per
 * key. "No" is certain and costs one access to a compact array, where a miss in a map of 100,000 entries costs
 * several cache misses; "maybe" (wrong for about 0.3 % of absent keys) is decided by the map (docs/decisions.md, "Lists
 * and velocity" → "one index per item type").
 */
import type { Steps } from '../steps.js'

/** The 32-bit hash of a key: FNV-1a over a string's code units (a number: its 32 bits), then a final mix. */
function hashOf(key: string | number): number {
  let h: number
  if (typeof key === 'number') h = key | 0
  else {
    h = 0x811c9dc5
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

/** The keys of one map of a list index; see the module comment. */
export class KeyFilter {
  private readonly bits: Int32Array
  private readonly blocks: number
  /** Keys asked about so far (tests count work with it). */
  work = 0

  /** A filter holding `keys` (`count` of them), at 32 bits per key. */
  constructor(keys: Iterable<string | number>, count: number) {
    let blocks = 1
    while (blocks * 512 < count * 32) blocks *= 2
    this.blocks = count === 0 ? 0 : blocks
    this.bits = new Int32Array(this.blocks * 16)
    for (const k of keys) this.set(hashOf(k))
  }

  /** The filter of `keys` (`count` of them), pausing (a `yield`) every `step` keys. */
  static *building(keys: Iterable<string | number>, count: number, step: number): Steps<KeyFilter> {
    const f = new KeyFilter([], count)
    let n = 0
    for (const k of keys) {
      f.set(hashOf(k))
      if (++n % step === 0) yield
    }
    return f
  }

  /** False when `key` is surely not held. */
  has(key: string | number): boolean {
    this.work++
    if (this.blocks === 0) return false
    const h = hashOf(key)
    const at = (h & (this.blocks - 1)) * 16
    const m = Math.imul(h, 0x9e3779b1) // the bits within the block: from the hash's other bits, mixed
    const p = (m >>> 14) & 511
    const q = m >>> 23
    return (this.bits[at + (p >>> 5)]! & (1 << (p & 31))) !== 0 && (this.bits[at + (q >>> 5)]! & (1 << (q & 31))) !== 0
  }

  private set(h: number): void {
    const at = (h & (this.blocks - 1)) * 16
    const m = Math.imul(h, 0x9e3779b1)
    const p = (m >>> 14) & 511
    const q = m >>> 23
    this.bits[at + (p >>> 5)] = (this.bits[at + (p >>> 5)] as number) | (1 << (p & 31))
    this.bits[at + (q >>> 5)] = (this.bits[at + (q >>> 5)] as number) | (1 << (q & 31))
  }
}
