/**
 * Builds the documented lookup result (docs/api.md "Schemas") (`data` of a single lookup) from a check outcome and its assessment.
 */
import { randomFillSync } from 'node:crypto'
import type { CheckOutcome } from './checks/types.js'
import type { LookupResult, LookupType } from './schema.js'
import type { Assessment } from './scoring/engine.js'

// Random bytes for request ids, drawn 4 KiB at a time and turned to hex at once (one randomFillSync and one hex
// conversion per 341 ids instead of one each per id).
const ID_BYTES = 12
const pool = Buffer.allocUnsafe(4096 - (4096 % ID_BYTES))
let poolHex = ''
let poolOffset = pool.length

/** A new request id: `req_` + 24 hex characters (96 random bits). */
export function newRequestId(): string {
  return `req_${randomHex(ID_BYTES, ID_BYTES * 2)}`
}

/** `chars` hex characters of the pool's next `bytes` random bytes (refilled when they run out). */
function randomHex(bytes: number, chars: number): string {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool)
    poolHex = pool.toString('hex')
    poolOffset = 0
  }
  const hex = poolHex.slice(poolOffset * 2, poolOffset * 2 + chars)
  poolOffset += bytes
  return hex
}

/**
 * A new request id of the service: `req_` + 24 hex characters, the first 11 the time in ms (so the ids of one period
 * sit together in the indexes that keep them: a new one lands on the index's last page, not on a random one) and the
 * other 13 random (52 bits). docs/decisions.md "Storage engines" → "request ids".
 */
export function newTimedRequestId(nowMs = Date.now()): string {
  return `req_${Math.floor(nowMs).toString(16).padStart(11, '0').slice(-11)}${randomHex(7, 13)}`
}

/** The distinct names of `sources`, in order (a handful: a scan beats a Set). */
function distinctSources(sources: readonly string[]): string[] {
  const out: string[] = []
  for (const s of sources) if (!out.includes(s)) out.push(s)
  return out
}

// Date#toISOString costs about 1 µs; at thousands of lookups a second most share their millisecond with the last one.
let lastMs = Number.NaN
let lastIso = ''

/** ISO 8601 of a date (UTC, milliseconds), reusing the previous string when the millisecond is the same. */
export function isoTimestamp(d: Date): string {
  const ms = d.getTime()
  if (ms !== lastMs) {
    lastIso = d.toISOString()
    lastMs = ms
  }
  return lastIso
}

/** What the facade knows about one lookup besides the outcome. */
export interface ResultMeta {
  type: LookupType
  input: unknown
  requestId: string
  /** Wall-clock time the request started (from the context clock). */
  startedAt: Date
  processingMs: number
  creditsUsed: number
  creditsRemaining: number | null
  cacheHit: boolean
  testMode: boolean
}

/** Assembles the result object in the documented field order. */
export function buildResult<D>(outcome: CheckOutcome<D>, assessment: Assessment, meta: ResultMeta): LookupResult<D> {
  return {
    request: {
      id: meta.requestId,
      type: meta.type,
      input: meta.input,
      timestamp: isoTimestamp(meta.startedAt),
      processing_time_ms: Math.max(0, Math.round(meta.processingMs)),
    },
    metadata: {
      api_version: '1',
      credits_used: meta.creditsUsed,
      credits_remaining: meta.testMode ? null : meta.creditsRemaining,
      cache_hit: meta.cacheHit,
      test_mode: meta.testMode,
      data_sources: distinctSources(outcome.dataSources),
    },
    verdict: { status: assessment.status, reason: assessment.reason },
    risk: {
      score: assessment.score,
      level: assessment.level,
      factors: assessment.factors,
      confidence: assessment.confidence,
    },
    details: outcome.details,
    recommendation: { action: assessment.action, message: assessment.message },
    partial: outcome.partial,
  }
}
