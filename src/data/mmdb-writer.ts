/**
 * A small MaxMind DB (MMDB, format 2.0) writer, written from the public format specification
 * (https://maxmind.github.io/MaxMind-DB/): no npm package writes MMDB. What it writes and how values are typed:
 * {@link MmdbWriter}.
 */
import { parseCidr, type ParsedCidr } from '../sources/ip/parse.js'

/** An explicitly typed MMDB value (see {@link mmdbType}). */
export class MmdbTyped {
  constructor(
    readonly type: 'uint16' | 'uint32' | 'uint64' | 'uint128' | 'int32' | 'double' | 'float',
    readonly value: number | bigint,
  ) {}
}

/** Helpers to force an MMDB type: `mmdbType.uint16(5)`, `mmdbType.float(1.5)`, `mmdbType.uint64(10n)`. */
export const mmdbType = {
  uint16: (v: number) => new MmdbTyped('uint16', v),
  uint32: (v: number) => new MmdbTyped('uint32', v),
  uint64: (v: number | bigint) => new MmdbTyped('uint64', v),
  uint128: (v: number | bigint) => new MmdbTyped('uint128', v),
  int32: (v: number) => new MmdbTyped('int32', v),
  double: (v: number) => new MmdbTyped('double', v),
  float: (v: number) => new MmdbTyped('float', v),
}

/** A value storable in the data section. */
export type MmdbValue = string | number | boolean | bigint | Uint8Array | MmdbTyped | MmdbValue[] | MmdbMap
/** A map (the usual record). */
export interface MmdbMap {
  [key: string]: MmdbValue
}

/** Options of {@link MmdbWriter}. */
export interface MmdbWriterOptions {
  /** 4: an IPv4-only tree; 6: an IPv6 tree that also holds IPv4 (at ::/96). */
  ipVersion: 4 | 6
  /** `database_type` metadata, e.g. `GeoIP2-City` or `riskcheck-ip-flags`. */
  databaseType: string
  /** record size in bits; default: the smallest of 24, 28, 32 that can address the tree and data */
  recordSize?: 24 | 28 | 32
  /** `languages` metadata (default []) */
  languages?: string[]
  /** `description` metadata, language → text (default {}) */
  description?: Record<string, string>
  /** `build_epoch` metadata in seconds since 1970 (default: now). Pass a fixed value for reproducible files. */
  buildEpoch?: number
  /** IPv6 trees only: alias ::ffff:0:0/96 and 2002::/16 to the IPv4 subtree (default true) */
  ipv4Aliases?: boolean
}

/** How an insert combines with data already present under its network. */
export type MergeFunction = (existing: MmdbMap | null, inserted: MmdbMap) => MmdbMap

const shallowMerge: MergeFunction = (existing, inserted) => (existing ? { ...existing, ...inserted } : inserted)

/** A stable key for a value, used to de-duplicate records. */
function valueKey(v: MmdbValue): string {
  if (v instanceof MmdbTyped) return `T${v.type}:${String(v.value)}`
  switch (typeof v) {
    case 'string':
      return `s${JSON.stringify(v)}`
    case 'number':
      return `n${v}`
    case 'boolean':
      return v ? 'b1' : 'b0'
    case 'bigint':
      return `B${v}`
  }
  if (v instanceof Uint8Array) return `x${Buffer.from(v).toString('hex')}`
  if (Array.isArray(v)) return `[${v.map(valueKey).join(',')}]`
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${valueKey((v as MmdbMap)[k] as MmdbValue)}`)
    .join(',')}}`
}

/** Appends MMDB data-section encodings, de-duplicating strings with pointers. */
class DataEncoder {
  private chunks: Buffer[] = []
  size = 0
  private readonly strings = new Map<string, number>()
  private readonly usePointers: boolean

  constructor(usePointers = true) {
    this.usePointers = usePointers
  }

  private push(b: Buffer): void {
    this.chunks.push(b)
    this.size += b.length
  }

  private control(type: number, size: number): void {
    const head: number[] = []
    let sizeBits: number
    const ext: number[] = []
    if (size < 29) sizeBits = size
    else if (size < 29 + 256) {
      sizeBits = 29
      ext.push(size - 29)
    } else if (size < 285 + 65536) {
      sizeBits = 30
      const s = size - 285
      ext.push(s >>> 8, s & 255)
    } else {
      sizeBits = 31
      const s = size - 65821
      if (s >= 1 << 24) throw new RangeError('mmdb-writer: value too large')
      ext.push(s >>> 16, (s >>> 8) & 255, s & 255)
    }
    if (type <= 7) head.push((type << 5) | sizeBits)
    else head.push(sizeBits, type - 7)
    this.push(Buffer.from([...head, ...ext]))
  }

  private pointer(offset: number): Buffer {
    if (offset < 2048) return Buffer.from([0x20 | (offset >>> 8), offset & 255])
    if (offset < 2048 + 524288) {
      const p = offset - 2048
      return Buffer.from([0x28 | (p >>> 16), (p >>> 8) & 255, p & 255])
    }
    if (offset < 526336 + 134217728) {
      const p = offset - 526336
      return Buffer.from([0x30 | (p >>> 24), (p >>> 16) & 255, (p >>> 8) & 255, p & 255])
    }
    const b = Buffer.alloc(5)
    b[0] = 0x38
    b.writeUInt32BE(offset >>> 0, 1)
    return b
  }

  private uint(type: number, v: bigint | number, maxBytes: number): void {
    let big = BigInt(v)
    if (big < 0n) throw new RangeError(`mmdb-writer: negative value for an unsigned type: ${v}`)
    const bytes: number[] = []
    while (big > 0n) {
      bytes.unshift(Number(big & 255n))
      big >>= 8n
    }
    if (bytes.length > maxBytes) throw new RangeError(`mmdb-writer: value too large for its type: ${v}`)
    this.control(type, bytes.length)
    this.push(Buffer.from(bytes))
  }

  string(s: string): void {
    const known = this.usePointers ? this.strings.get(s) : undefined
    const bytes = Buffer.from(s, 'utf8')
    if (known !== undefined) {
      const p = this.pointer(known)
      if (p.length < bytes.length + 1) {
        this.push(p)
        return
      }
    }
    if (this.usePointers && known === undefined) this.strings.set(s, this.size)
    this.control(2, bytes.length)
    this.push(bytes)
  }

  value(v: MmdbValue): void {
    if (v instanceof MmdbTyped) {
      const n = v.value
      switch (v.type) {
        case 'uint16':
          return this.uint(5, n, 2)
        case 'uint32':
          return this.uint(6, n, 4)
        case 'uint64':
          return this.uint(9, n, 8)
        case 'uint128':
          return this.uint(10, n, 16)
        case 'int32': {
          const x = Number(n)
          if (!Number.isInteger(x) || x < -0x80000000 || x > 0x7fffffff) throw new RangeError(`mmdb-writer: not an int32: ${x}`)
          const b = Buffer.alloc(4)
          b.writeInt32BE(x)
          let start = 0
          if (x >= 0) while (start < 4 && b[start] === 0) start++
          this.control(8, 4 - start)
          this.push(b.subarray(start))
          return
        }
        case 'double': {
          const b = Buffer.alloc(8)
          b.writeDoubleBE(Number(n))
          this.control(3, 8)
          this.push(b)
          return
        }
        case 'float': {
          const b = Buffer.alloc(4)
          b.writeFloatBE(Number(n))
          this.control(15, 4)
          this.push(b)
          return
        }
      }
    }
    switch (typeof v) {
      case 'string':
        return this.string(v)
      case 'boolean':
        return this.control(14, v ? 1 : 0)
      case 'bigint':
        return v < 2n ** 64n ? this.uint(9, v, 8) : this.uint(10, v, 16)
      case 'number':
        if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) return this.uint(6, v, 4)
        if (Number.isInteger(v) && v < 0 && v >= -0x80000000) return this.value(mmdbType.int32(v))
        return this.value(mmdbType.double(v))
    }
    if (v instanceof Uint8Array) {
      this.control(4, v.length)
      this.push(Buffer.from(v))
      return
    }
    if (Array.isArray(v)) {
      this.control(11, v.length)
      for (const x of v) this.value(x)
      return
    }
    const keys = Object.keys(v)
    this.control(7, keys.length)
    for (const k of keys) {
      this.string(k)
      this.value((v as MmdbMap)[k] as MmdbValue)
    }
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.chunks)
  }
}

const EMPTY = 0

/**
 * Builds an MMDB file in memory: insert networks, then call {@link MmdbWriter.toBuffer}. A search tree of 24-, 28- or
 * 32-bit records (the smallest that fits); in an IPv6 tree IPv4 lives at `::a.b.c.d/(96+n)`, aliased at `::ffff:0:0/96`
 * and `2002::/16`. A later insert overrides its network (maps merged unless `merge` decides); identical siblings
 * collapse. Values map by kind (string → utf8_string, integer → uint32 or int32, other number → double, bigint →
 * uint64, object → map …); {@link mmdbType} picks another.
 *
 * @example
 * const w = new MmdbWriter({ ipVersion: 6, databaseType: 'Example-Flags' })
 * w.insert('192.0.2.0/24', { is_tor: true })
 * fs.writeFileSync('flags.mmdb', w.toBuffer())
 */
export class MmdbWriter {
  private readonly opts: MmdbWriterOptions
  private left = new Int32Array(1024)
  private right = new Int32Array(1024)
  private nodeCount = 1 // node 0 is the root
  private readonly records: MmdbMap[] = []
  private readonly recordIds = new Map<string, number>()
  private finished = false
  private output: Buffer | null = null

  constructor(opts: MmdbWriterOptions) {
    if (opts.ipVersion !== 4 && opts.ipVersion !== 6) throw new TypeError('mmdb-writer: ipVersion must be 4 or 6')
    if (typeof opts.databaseType !== 'string' || opts.databaseType === '') throw new TypeError('mmdb-writer: databaseType is required')
    this.opts = opts
  }

  /** Number of distinct records so far. */
  get recordCount(): number {
    return this.records.length
  }

  private newNode(l: number, r: number): number {
    if (this.nodeCount === this.left.length) {
      const nl = new Int32Array(this.left.length * 2)
      nl.set(this.left)
      const nr = new Int32Array(this.right.length * 2)
      nr.set(this.right)
      this.left = nl
      this.right = nr
    }
    const n = this.nodeCount++
    this.left[n] = l
    this.right[n] = r
    return n
  }

  private dataRef(rec: MmdbMap): number {
    const key = valueKey(rec)
    let id = this.recordIds.get(key)
    if (id === undefined) {
      id = this.records.length
      this.records.push(rec)
      this.recordIds.set(key, id)
    }
    return -(id + 1)
  }

  private applyTo(ref: number, rec: MmdbMap, merge: MergeFunction, memo: Map<number, number>): number {
    if (ref > 0) {
      this.left[ref] = this.applyTo(this.left[ref] as number, rec, merge, memo)
      this.right[ref] = this.applyTo(this.right[ref] as number, rec, merge, memo)
      return ref
    }
    const cached = memo.get(ref)
    if (cached !== undefined) return cached
    const existing = ref === EMPTY ? null : (this.records[-ref - 1] as MmdbMap)
    const out = this.dataRef(merge(existing, rec))
    memo.set(ref, out)
    return out
  }

  /**
   * Sets (merges) `data` for every address of a network: `'192.0.2.0/24'`, `'2001:db8::/32'`, a bare address, or a
   * parsed CIDR. IPv4 networks in an IPv6 tree go to `::a.b.c.d/(96+n)`. Throws on an unparsable network, an IPv6
   * network in an IPv4 tree, or after `toBuffer()`.
   */
  insert(network: string | ParsedCidr, data: MmdbMap, opts: { merge?: MergeFunction } = {}): void {
    if (this.finished) throw new Error('mmdb-writer: insert after toBuffer()')
    const cidr = typeof network === 'string' ? parseCidr(network) : network
    if (!cidr) throw new TypeError(`mmdb-writer: not a network: ${String(network)}`)
    let words: number[]
    let prefix: number
    if (cidr.version === 4) {
      if (this.opts.ipVersion === 4) {
        words = [cidr.first]
        prefix = cidr.prefix
      } else {
        words = [0, 0, 0, cidr.first]
        prefix = cidr.prefix + 96
      }
    } else {
      if (this.opts.ipVersion === 4) throw new TypeError(`mmdb-writer: IPv6 network in an IPv4 tree: ${String(network)}`)
      words = [...cidr.first]
      prefix = cidr.prefix
    }
    const merge = opts.merge ?? shallowMerge
    const memo = new Map<number, number>()
    if (prefix === 0) {
      this.left[0] = this.applyTo(this.left[0] as number, data, merge, memo)
      this.right[0] = this.applyTo(this.right[0] as number, data, merge, memo)
      return
    }
    let node = 0
    for (let depth = 0; depth < prefix; depth++) {
      const bit = ((words[depth >>> 5] as number) >>> (31 - (depth & 31))) & 1
      const side = bit ? this.right : this.left
      const child = side[node] as number
      if (depth === prefix - 1) {
        const updated = this.applyTo(child, data, merge, memo)
        ;(bit ? this.right : this.left)[node] = updated
        return
      }
      if (child > 0) node = child
      else {
        // split an empty or data record into a node whose halves both carry it
        const n = this.newNode(child, child)
        ;(bit ? this.right : this.left)[node] = n
        node = n
      }
    }
  }

  /** Collapses nodes whose two halves are the same record (or both empty), bottom-up. */
  private collapse(ref: number): number {
    if (ref <= 0) return ref
    const l = this.collapse(this.left[ref] as number)
    const r = this.collapse(this.right[ref] as number)
    this.left[ref] = l
    this.right[ref] = r
    if (l <= 0 && l === r) return l
    return ref
  }

  /** The record reached after following `bits` from the root, creating nodes along the way. */
  private ensurePath(bits: number[]): { node: number; side: 0 | 1 } {
    let node = 0
    for (let i = 0; i < bits.length - 1; i++) {
      const side = bits[i] ? this.right : this.left
      let child = side[node] as number
      if (child <= 0) {
        child = this.newNode(child, child)
        side[node] = child
      }
      node = child
    }
    return { node, side: bits[bits.length - 1] ? 1 : 0 }
  }

  private addAliases(): void {
    // the IPv4 subtree: the record at ::/96
    const v4 = this.ensurePath(new Array<number>(96).fill(0))
    const target = (v4.side ? this.right : this.left)[v4.node] as number
    const bitsOf = (words: number[], len: number): number[] => {
      const out: number[] = []
      for (let i = 0; i < len; i++) out.push(((words[i >>> 5] as number) >>> (31 - (i & 31))) & 1)
      return out
    }
    for (const [words, len] of [
      [[0, 0, 0xffff, 0], 96],
      [[0x20020000, 0, 0, 0], 16],
    ] as Array<[number[], number]>) {
      const at = this.ensurePath(bitsOf(words, len))
      ;(at.side ? this.right : this.left)[at.node] = target
    }
  }

  /**
   * Serializes the database (once; later calls return the same buffer). After this call the writer is frozen.
   * Throws a RangeError when the tree and data do not fit the requested record size.
   */
  toBuffer(): Buffer {
    if (this.output) return this.output
    this.finished = true
    // the root (node 0) always stays a node; collapse below it
    this.left[0] = this.collapse(this.left[0] as number)
    this.right[0] = this.collapse(this.right[0] as number)
    if (this.opts.ipVersion === 6 && this.opts.ipv4Aliases !== false) this.addAliases()

    // number reachable nodes breadth-first (aliases point at already numbered nodes)
    const number = new Int32Array(this.nodeCount).fill(-1)
    const order: number[] = [0]
    number[0] = 0
    for (let i = 0; i < order.length; i++) {
      const n = order[i] as number
      for (const c of [this.left[n] as number, this.right[n] as number]) {
        if (c > 0 && number[c] === -1) {
          number[c] = order.length
          order.push(c)
        }
      }
    }
    const nodeCount = order.length

    // data section: each referenced record once
    const enc = new DataEncoder(true)
    const offsets = new Map<number, number>()
    for (const n of order) {
      for (const c of [this.left[n] as number, this.right[n] as number]) {
        if (c < 0 && !offsets.has(c)) {
          offsets.set(c, enc.size)
          enc.value(this.records[-c - 1] as MmdbMap)
        }
      }
    }
    const data = enc.toBuffer()

    const maxValue = nodeCount + 16 + data.length
    const recordSize = this.opts.recordSize ?? (maxValue < 2 ** 24 ? 24 : maxValue < 2 ** 28 ? 28 : 32)
    if (maxValue >= 2 ** recordSize) throw new RangeError(`mmdb-writer: ${recordSize}-bit records cannot address ${maxValue} values`)
    const nodeBytes = recordSize / 4
    const tree = Buffer.alloc(nodeCount * nodeBytes)
    const recordValue = (c: number): number => {
      if (c === EMPTY) return nodeCount
      if (c > 0) return number[c] as number
      return nodeCount + 16 + (offsets.get(c) as number)
    }
    for (let i = 0; i < nodeCount; i++) {
      const n = order[i] as number
      const l = recordValue(this.left[n] as number)
      const r = recordValue(this.right[n] as number)
      const o = i * nodeBytes
      if (recordSize === 24) {
        tree.writeUIntBE(l, o, 3)
        tree.writeUIntBE(r, o + 3, 3)
      } else if (recordSize === 28) {
        tree.writeUIntBE(l & 0xffffff, o, 3)
        tree[o + 3] = (((l >>> 24) & 0x0f) << 4) | ((r >>> 24) & 0x0f)
        tree.writeUIntBE(r & 0xffffff, o + 4, 3)
      } else {
        tree.writeUInt32BE(l >>> 0, o)
        tree.writeUInt32BE(r >>> 0, o + 4)
      }
    }

    const meta = new DataEncoder(false)
    meta.value({
      node_count: mmdbType.uint32(nodeCount),
      record_size: mmdbType.uint16(recordSize),
      ip_version: mmdbType.uint16(this.opts.ipVersion),
      database_type: this.opts.databaseType,
      languages: this.opts.languages ?? [],
      binary_format_major_version: mmdbType.uint16(2),
      binary_format_minor_version: mmdbType.uint16(0),
      build_epoch: mmdbType.uint64(BigInt(Math.floor(this.opts.buildEpoch ?? Date.now() / 1000))),
      description: this.opts.description ?? {},
    })
    const marker = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex')
    this.output = Buffer.concat([tree, Buffer.alloc(16), data, marker, meta.toBuffer()])
    return this.output
  }
}
