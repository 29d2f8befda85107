/**
 * riskcheck — checks emails, phone numbers, IP addresses and domains and returns, for each input, a verdict, an
 * explainable risk score and a recommended action (approve, verify, review, block).
 *
 * @example
 * import { createRiskcheck } from 'riskcheck'
 * const rc = createRiskcheck()
 * const r = await rc.check({ email: 'jane@example.org', ip: '203.0.113.7', context: 'signup' })
 * if (r.recommendation.action === 'block') …
 * await rc.close()
 */
export { createRiskcheck } from './riskcheck.js'
export type { Riskcheck, LookupOptionsOf } from './riskcheck.js'
export { updateData, rollbackData } from './data/update.js'
export type { UpdateEvent, UpdateOptions, UpdateResult, UpdatedSource } from './data/update.js'
export { readDataStatus } from './data/provider.js'
export type { DataRefresh } from './data/provider.js'
export type { DataStatus, SourceStatus } from './data/status.js'
export { DATA_SOURCES, DATA_SOURCE_NAMES } from './data/catalog.js'
export type { DataSourceInfo, DataSourceName } from './data/catalog.js'
export { startDataRefresh } from './data/scheduler.js'
export type { DataRefreshOptions, DataRefreshSchedule } from './data/scheduler.js'
export { DataLockedError } from './data/lock.js'
export type { CheckInput } from './checks/combined.js'
export type {
  DnsOptions,
  IpOptions,
  PhoneOptions,
  RdapOptions,
  RiskcheckOptions,
  RiskcheckWarning,
  SmtpOptions,
} from './options.js'
export { RiskcheckError, ERROR_CODES, ERROR_STATUS, isRiskcheckError } from './errors.js'
export type { ErrorCode } from './errors.js'
export { createBulkEngine, createMemoryBulkStore, MAX_BULK_INPUTS } from './bulk/index.js'
export type { BulkEngine, BulkOptions, BulkStore, CsvStream, CsvStreamDestination } from './bulk/index.js'
export { createMemoryCache, CACHE_TTL_MS } from './cache.js'
export type { CacheEntry, ResultCache } from './cache.js'
export { createMemoryLedger } from './credits.js'
export { compileLists, defaultListId, ListsError } from './lists/compile.js'
export type { CompiledLists } from './lists/compile.js'
export type { InvalidListItem, ListDefinition, ListItemInput, ListItemType, ListKind, ListMatch, ListsOption, ListSummary } from './lists/types.js'
export { OUTCOME_KINDS, OutcomesFileError, parseOutcomes, readOutcomesFile } from './outcomes/file.js'
export type { OutcomeEntry, OutcomeKind } from './outcomes/file.js'
export { OutcomesError } from './outcomes/holder.js'
export type { OutcomesOption, OutcomesSummary } from './outcomes/holder.js'
export { createMemoryVelocityStore, HOUR_MS, DAY_MS } from './velocity/store.js'
export type { MemoryVelocityStoreOptions, VelocityStore, WindowCount } from './velocity/store.js'
export { createRedisVelocityStore } from './velocity/redis-store.js'
export type { RedisLike, RedisVelocityStoreOptions } from './velocity/redis-store.js'
export type { VelocityOptions } from './velocity/counter.js'
export { canonicalEmail } from './checks/email/canonical.js'
export type { CreditLedger } from './credits.js'
export { creditsFor } from './billing.js'
export { createTwilioCarrierSource } from './sources/phone/twilio.js'
export type { TwilioCarrierSourceOptions } from './sources/phone/twilio.js'
export { PhoneCarrierError } from './sources/phone/carrier-source.js'
export type { CarrierLookupOptions, LiveCarrierRecord, PhoneCarrierSource } from './sources/phone/carrier-source.js'
export { signWebhook, verifyWebhook, DEFAULT_TOLERANCE_SECONDS } from './webhooks/signature.js'
export type { WebhookVerifyError, WebhookVerifyResult } from './webhooks/signature.js'
export {
  applyContext,
  createPolicy,
  evaluate,
  levelOf,
  score,
  statusOf,
  DEFAULT_POLICY,
  FACTORS,
  FACTOR_CODES,
  describeFactor,
} from './scoring/index.js'
export type { Assessment, FactorCode, Policy, PolicyOverrides, PolicyRule } from './scoring/index.js'
export * from './schema.js'
