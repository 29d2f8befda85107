/**
 * IP prefixes (addresses and CIDR networks, v4 and v6) with a payload each, found by address: sorted ranges with a
 * parent link each, so a lookup is one binary search and a walk up the parents (innermost first); IPv6 bounds are four
 * 32-bit words in typed arrays. `work` counts the steps, so tests prove the cost grows with log n (docs/decisions.md,
 * "Lists and velocity" → "one index per item type").
 */
import type { ParsedCidr, ParsedIp } from '../sources/ip/parse.js'
import type { Steps } from '../steps.js'

interface Row<T> {
  first: number | readonly number[]
  last: number | readonly number[]
  payload: T
}

function cmpWords(a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number): number {
  for (let k = 0; k < 4; k++) {
    const x = a[ai + k] as number
    const y = b[bi + k] as number
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

const lt = (a: Row<unknown>, b: Row<unknown>): number => {
  if (typeof a.first === 'number') return a.first - (b.first as number) || (b.last as number) - (a.last as number)
  return cmpWords(a.first, 0, b.first as number[], 0) || cmpWords(b.last as number[], 0, a.last as number[], 0)
}

/** Ranges from which a family has a directory (below, the binary search is short anyway). */
const DIRECTORY_FROM = 4096

/** One address family: bounds, parents and payloads in start order. */
class Family<T> {
  /**
   * `dir`: with many ranges, `dir[p]` is the first range whose start's top 16 bits are p or more (65,537 entries), so
   * a lookup searches only the ranges starting in its address's /16 (IPv4) or /16 of IPv6: a step or two, not 16
   * through a large array (each a cache miss). Null for few ranges.
   */
  private constructor(
    readonly first: Uint32Array,
    readonly last: Uint32Array,
    readonly parent: Int32Array,
    readonly payloads: T[],
    readonly words: 1 | 4,
    readonly dir: Int32Array | null = null,
  ) {}

  /** The family of `rows` (in start order), pausing (a `yield`) every {@link SORT_STEP} rows. */
  static *building<T>(rows: Row<T>[], words: 1 | 4): Steps<Family<T>> {
    const n = rows.length
    const f = new Family<T>(new Uint32Array(n * words), new Uint32Array(n * words), new Int32Array(n), new Array<T>(n), words)
    const stack: number[] = []
    for (let i = 0; i < n; i++) {
      const r = rows[i] as Row<T>
      f.payloads[i] = r.payload
      if (words === 1) {
        f.first[i] = r.first as number
        f.last[i] = r.last as number
      } else {
        f.first.set(r.first as number[], i * 4)
        f.last.set(r.last as number[], i * 4)
      }
      // ranges that end before this one starts are no ancestors of it (nor of anything after it)
      while (stack.length > 0 && f.endsBefore(stack[stack.length - 1] as number, i)) stack.pop()
      f.parent[i] = stack.length > 0 ? (stack[stack.length - 1] as number) : -1
      stack.push(i)
      if ((i + 1) % SORT_STEP === 0) yield
    }
    return n >= DIRECTORY_FROM ? new Family(f.first, f.last, f.parent, f.payloads, words, f.directory()) : f
  }

  private directory(): Int32Array {
    const dir = new Int32Array(65537)
    const n = this.parent.length
    let i = 0
    for (let p = 0; p <= 65536; p++) {
      while (i < n && (this.first[i * this.words] as number) >>> 16 < p) i++
      dir[p] = i
    }
    return dir
  }

  /** True when range `a` ends before range `b` starts. */
  private endsBefore(a: number, b: number): boolean {
    if (this.words === 1) return (this.last[a] as number) < (this.first[b] as number)
    return cmpWords(this.last, a * 4, this.first, b * 4) < 0
  }

  get size(): number {
    return this.parent.length
  }
}

/** Elements a paused sort moves between two pauses. */
const SORT_STEP = 1 << 16

/** Sorts `a` in place by `cmp` (a stable merge sort), pausing (a `yield`) every {@link SORT_STEP} elements moved. */
function* sortPausing<T>(a: T[], cmp: (x: T, y: T) => number): Steps<void> {
  const n = a.length
  let src = a
  let dst = new Array<T>(n)
  let moved = 0
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n)
      const hi = Math.min(lo + 2 * width, n)
      let i = lo
      let j = mid
      for (let k = lo; k < hi; k++) {
        // the left one first when equal: stable
        dst[k] = j >= hi || (i < mid && cmp(src[j] as T, src[i] as T) >= 0) ? (src[i++] as T) : (src[j++] as T)
        if (++moved === SORT_STEP) {
          moved = 0
          yield
        }
      }
    }
    ;[src, dst] = [dst, src]
  }
  if (src !== a) for (let k = 0; k < n; k++) a[k] = src[k] as T
}

/** IP prefixes with payloads; see the module comment. */
export class PrefixIndex<T> {
  /** Steps taken by all lookups so far (binary-search steps and parent hops). */
  work = 0

  private constructor(
    private readonly v4: Family<T>,
    private readonly v6: Family<T>,
  ) {}

  /**
   * Builds the index of `rows`, pausing (a `yield`) every few thousand rows while it reads and sorts them, so large
   * lists compile a turn at a time. Rows with the same network must be merged by the caller (one payload per network).
   */
  static *building<T>(rows: ReadonlyArray<{ cidr: ParsedCidr; payload: T }>): Steps<PrefixIndex<T>> {
    const v4: Row<T>[] = []
    const v6: Row<T>[] = []
    for (const { cidr, payload } of rows) {
      ;(cidr.version === 4 ? v4 : v6).push({ first: cidr.first, last: cidr.last, payload })
      if ((v4.length + v6.length) % SORT_STEP === 0) yield
    }
    yield* sortPausing(v4, lt)
    yield* sortPausing(v6, lt)
    yield
    const f4 = yield* Family.building(v4, 1)
    const f6 = yield* Family.building(v6, 4)
    return new PrefixIndex(f4, f6)
  }

  /** Number of networks. */
  get size(): number {
    return this.v4.size + this.v6.size
  }

  /**
   * Calls `visit` with the payload of every network holding `ip`, innermost first, until it returns true.
   *
   * @example index.find(parseIp('203.0.113.7')!, (p) => { hits.push(p); return false })
   */
  find(ip: ParsedIp, visit: (payload: T) => boolean): void {
    const f = ip.version === 4 ? this.v4 : this.v6
    if (f.size === 0) return
    let lo = 0
    let hi = f.size - 1
    let steps = 0
    if (f.dir !== null) {
      // the ranges starting before this /16 start before the address; those starting after it, after
      const top = (ip.version === 4 ? ip.value : (ip.words[0] as number)) >>> 16
      lo = f.dir[top] as number
      hi = (f.dir[top + 1] as number) - 1
    }
    if (ip.version === 4) {
      const x = ip.value
      while (lo <= hi) {
        steps++
        const mid = (lo + hi) >>> 1
        if ((f.first[mid] as number) <= x) lo = mid + 1
        else hi = mid - 1
      }
      let j = hi
      while (j >= 0 && (f.last[j] as number) < x) {
        steps++
        j = f.parent[j] as number
      }
      for (; j >= 0; j = f.parent[j] as number) {
        steps++
        if (visit(f.payloads[j] as T)) break
      }
    } else {
      const w = ip.words
      while (lo <= hi) {
        steps++
        const mid = (lo + hi) >>> 1
        if (cmpWords(f.first, mid * 4, w, 0) <= 0) lo = mid + 1
        else hi = mid - 1
      }
      let j = hi
      while (j >= 0 && cmpWords(f.last, j * 4, w, 0) < 0) {
        steps++
        j = f.parent[j] as number
      }
      for (; j >= 0; j = f.parent[j] as number) {
        steps++
        if (visit(f.payloads[j] as T)) break
      }
    }
    this.work += steps
  }
}
