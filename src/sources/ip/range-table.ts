/**
 * Compact sorted IP range tables: typed arrays of range starts and ends, searched by binary search.
 * IPv4 ranges are unsigned 32-bit integers; IPv6 ranges are four 32-bit words each (most significant first).
 * Used for the ASN table (`./asn.ts`) and the configured blocklists (`./blocklists.ts`).
 */

/** Sorted, non-overlapping IPv4 ranges; `find` answers the index of the range holding an address, or -1. */
export class Ipv4RangeTable {
  readonly starts: Uint32Array
  readonly ends: Uint32Array

  constructor(starts: Uint32Array, ends: Uint32Array) {
    this.starts = starts
    this.ends = ends
  }

  /** Number of ranges. */
  get size(): number {
    return this.starts.length
  }

  /** Index of the range containing `value` (unsigned 32-bit), or -1. */
  find(value: number): number {
    const starts = this.starts
    let lo = 0
    let hi = starts.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if ((starts[mid] as number) <= value) lo = mid + 1
      else hi = mid - 1
    }
    return hi >= 0 && (this.ends[hi] as number) >= value ? hi : -1
  }
}

/** Compares the 128-bit value at `arr[i*4..]` with `w`: negative, 0 or positive. */
function cmp128(arr: Uint32Array, i: number, w: readonly number[]): number {
  const o = i * 4
  for (let k = 0; k < 4; k++) {
    const a = arr[o + k] as number
    const b = w[k] as number
    if (a !== b) return a < b ? -1 : 1
  }
  return 0
}

/** Sorted, non-overlapping IPv6 ranges (4 words per bound). */
export class Ipv6RangeTable {
  readonly starts: Uint32Array
  readonly ends: Uint32Array

  constructor(starts: Uint32Array, ends: Uint32Array) {
    this.starts = starts
    this.ends = ends
  }

  get size(): number {
    return this.starts.length / 4
  }

  /** Index of the range containing the address given as four 32-bit words, or -1. */
  find(words: readonly number[]): number {
    let lo = 0
    let hi = this.starts.length / 4 - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (cmp128(this.starts, mid, words) <= 0) lo = mid + 1
      else hi = mid - 1
    }
    return hi >= 0 && cmp128(this.ends, hi, words) >= 0 ? hi : -1
  }
}

/** One IPv4 range with a payload number. */
export interface Ipv4Row {
  first: number
  last: number
  payload: number
}

/** One IPv6 range with a payload number. */
export interface Ipv6Row {
  first: readonly number[]
  last: readonly number[]
  payload: number
}

const cmpWords = (a: readonly number[], b: readonly number[]): number => {
  for (let k = 0; k < 4; k++) {
    const x = a[k] as number
    const y = b[k] as number
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

/** The 128-bit successor of `w` (saturating at all-ones). */
function inc128(w: readonly number[]): number[] {
  const out = [...w]
  for (let k = 3; k >= 0; k--) {
    if ((out[k] as number) !== 0xffffffff) {
      out[k] = ((out[k] as number) + 1) >>> 0
      return out
    }
    out[k] = 0
  }
  return [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff]
}

/**
 * Sorts rows by start and makes them non-overlapping. With `merge`, overlapping or adjacent rows are joined (payload
 * of the first); without it, a row overlapping an earlier one is clipped to start after it (or dropped).
 * Returns the table and the payload of each range.
 */
export function buildIpv4Table(rows: Ipv4Row[], merge: boolean): { table: Ipv4RangeTable; payloads: Uint32Array } {
  rows.sort((a, b) => a.first - b.first || b.last - a.last)
  const starts: number[] = []
  const ends: number[] = []
  const payloads: number[] = []
  for (const r of rows) {
    const n = ends.length
    const prevEnd = n ? (ends[n - 1] as number) : -1
    if (r.first <= prevEnd || (merge && n && r.first === prevEnd + 1)) {
      if (merge) {
        if (r.last > prevEnd) ends[n - 1] = r.last
        continue
      }
      if (r.last <= prevEnd) continue
      starts.push(prevEnd + 1)
    } else starts.push(r.first)
    ends.push(r.last)
    payloads.push(r.payload)
  }
  return {
    table: new Ipv4RangeTable(Uint32Array.from(starts), Uint32Array.from(ends)),
    payloads: Uint32Array.from(payloads),
  }
}

/** IPv6 counterpart of {@link buildIpv4Table}. */
export function buildIpv6Table(rows: Ipv6Row[], merge: boolean): { table: Ipv6RangeTable; payloads: Uint32Array } {
  rows.sort((a, b) => cmpWords(a.first, b.first) || cmpWords(b.last, a.last))
  const starts: number[] = []
  const ends: number[] = []
  const payloads: number[] = []
  let prevEnd: readonly number[] | null = null
  for (const r of rows) {
    if (prevEnd) {
      const overlaps = cmpWords(r.first, prevEnd) <= 0
      const adjacent = !overlaps && cmpWords(r.first, inc128(prevEnd)) === 0 && cmpWords(prevEnd, [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff]) !== 0
      if (overlaps || (merge && adjacent)) {
        if (merge) {
          if (cmpWords(r.last, prevEnd) > 0) {
            ends.splice(ends.length - 4, 4, ...r.last)
            prevEnd = r.last
          }
          continue
        }
        if (cmpWords(r.last, prevEnd) <= 0) continue
        starts.push(...inc128(prevEnd))
        ends.push(...r.last)
        payloads.push(r.payload)
        prevEnd = r.last
        continue
      }
    }
    starts.push(...r.first)
    ends.push(...r.last)
    payloads.push(r.payload)
    prevEnd = r.last
  }
  return {
    table: new Ipv6RangeTable(Uint32Array.from(starts), Uint32Array.from(ends)),
    payloads: Uint32Array.from(payloads),
  }
}
