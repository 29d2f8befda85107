/**
 * Compact form of a row's details for stores that keep rows as text or bytes (the in-memory store; a SQL store may
 * use it for its details column too). Details that have exactly the documented shape of their type are packed as
 * the array of their leaf values in schema order — about a third smaller as JSON than the object, because the keys
 * are not repeated 100,000 times; anything else is kept as the object. Unpacking gives back an equal object (keys
 * in schema order).
 */
import type { BulkType } from '../schema.js'
import { detailsPaths } from './csv.js'

/** Packs and unpacks the details of one lookup type. */
export interface DetailsCodec {
  /** The leaf values in schema order (an array), or the details object itself when its shape is not the schema's. */
  pack(details: Record<string, unknown>): unknown[] | Record<string, unknown>
  /** The details object back from what {@link pack} gave. */
  unpack(packed: unknown[] | Record<string, unknown>): Record<string, unknown>
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** Number of leaves (non-object values, arrays included) of a details object, or -1 past `max`. */
function countLeaves(o: Record<string, unknown>, max: number): number {
  let n = 0
  for (const k in o) {
    const v = o[k]
    if (isPlainObject(v)) {
      const sub = countLeaves(v, max - n)
      if (sub < 0) return -1
      n += sub
    } else n++
    if (n > max) return -1
  }
  return n
}

const codecs = new Map<BulkType, DetailsCodec>()

/**
 * The codec of `type`.
 *
 * @example
 * const c = detailsCodec('ip'); c.unpack(c.pack(details)) // deep-equals details
 */
export function detailsCodec(type: BulkType): DetailsCodec {
  let codec = codecs.get(type)
  if (codec) return codec
  const paths = detailsPaths(type)
  codec = {
    pack(details) {
      if (countLeaves(details, paths.length) !== paths.length) return details
      const values: unknown[] = new Array(paths.length)
      for (let i = 0; i < paths.length; i++) {
        let v: unknown = details
        for (const k of paths[i] as string[]) {
          if (!isPlainObject(v) || !(k in v)) return details
          v = v[k]
        }
        if (isPlainObject(v) || v === undefined) return details
        values[i] = v
      }
      return values
    },
    unpack(packed) {
      if (!Array.isArray(packed)) return packed
      const out: Record<string, unknown> = {}
      for (let i = 0; i < paths.length; i++) {
        const path = paths[i] as string[]
        let o = out
        for (let j = 0; j < path.length - 1; j++) o = (o[path[j] as string] ??= {}) as Record<string, unknown>
        o[path[path.length - 1] as string] = packed[i]
      }
      return out
    },
  }
  codecs.set(type, codec)
  return codec
}
