/**
 * Bulk jobs: one lookup type over up to 100,000 inputs, folded, billed per unique input, cancellable, paged and
 * exported as CSV. `createBulkEngine(env, options)` binds the registry's checks; the facade exposes it as `rc.bulk`.
 */
import { CHECKS } from '../checks/registry.js'
import type { LookupEnv } from '../lookup.js'
import { createBulkEngineFor } from './engine.js'
import type { BulkEngine, BulkOptions } from './types.js'

/**
 * Creates the bulk engine over a lookup environment (`rc.env`). Throws a TypeError for bad options. Jobs of a
 * persistent store that were queued or running are resumed (unless `resume: false`).
 *
 * @example
 * const bulk = createBulkEngine(rc.env, { concurrency: 32 })
 * const job = await bulk.create({ type: 'phone', inputs: ['+14155550100', '+442079460000'], country: 'US' })
 * const done = await bulk.waitFor(job.id)
 * const { data, next_cursor } = await bulk.results(job.id, { limit: 100, action: 'block' })
 */
export function createBulkEngine(env: LookupEnv, options: BulkOptions = {}): BulkEngine {
  return createBulkEngineFor(CHECKS, env, options)
}

export { createBulkEngineFor, MAX_BULK_INPUTS, BULK_RETENTION_MS, DEFAULT_BULK_CONCURRENCY, type BulkChecks } from './engine.js'
export { createMemoryBulkStore } from './memory-store.js'
export { detailsCodec, type DetailsCodec } from './codec.js'
export { csvColumns, createResultsCsv, readCsvRecords } from './csv.js'
export type {
  BulkCreateParams,
  BulkEngine,
  BulkJobOptions,
  BulkJobPage,
  BulkJobRecord,
  BulkListCursor,
  BulkOptions,
  BulkRowQuery,
  BulkRowRecord,
  BulkRowState,
  BulkStore,
  CsvStream,
  CsvStreamDestination,
  MaybePromise,
} from './types.js'
