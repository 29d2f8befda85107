/**
 * Builds the spec's lookup result (`data` of a single lookup) from a check outcome and its assessment.
 */
import { randomUUID } from 'node:crypto'
import type { CheckOutcome } from './checks/types.js'
import type { LookupResult, LookupType } from './schema.js'
import type { Assessment } from './scoring/engine.js'

/**
 * A new request id: `req_` + 32 hex characters (a random UUID v4 without dashes; Node draws UUIDs from a cached
 * entropy pool, several times cheaper than a `randomBytes` call per id).
 */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`
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

/** Assembles the result object in the spec's field order. */
export function buildResult<D>(outcome: CheckOutcome<D>, assessment: Assessment, meta: ResultMeta): LookupResult<D> {
  return {
    request: {
      id: meta.requestId,
      type: meta.type,
      input: meta.input,
      timestamp: meta.startedAt.toISOString(),
      processing_time_ms: Math.max(0, Math.round(meta.processingMs)),
    },
    metadata: {
      api_version: '1',
      credits_used: meta.creditsUsed,
      credits_remaining: meta.testMode ? null : meta.creditsRemaining,
      cache_hit: meta.cacheHit,
      test_mode: meta.testMode,
      data_sources: [...new Set(outcome.dataSources)],
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
