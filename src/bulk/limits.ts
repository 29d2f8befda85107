/** Limits of bulk jobs, in a module of their own so the settings table (src/settings.ts) can name them. */

/** Most inputs of one job (docs/api.md, POST /v1/bulk/jobs). */
export const MAX_BULK_INPUTS = 100_000
/** Default lookups in flight over all jobs. */
export const DEFAULT_BULK_CONCURRENCY = 32
