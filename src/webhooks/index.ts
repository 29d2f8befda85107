/**
 * Webhooks: signatures, event builders, formats, the SSRF guard, delivery, the retry schedule and the delivery
 * queue. The HTTP server wires these to its store and routes.
 *
 * @example
 * import { buildCreditsLowEvent, enqueueEvent, createDeliveryWorker } from './index.js'
 */
export { signWebhook, verifyWebhook, DEFAULT_TOLERANCE_SECONDS } from './signature.js'
export type { WebhookVerifyError, WebhookVerifyResult } from './signature.js'
export {
  BLOCKED_WEBHOOK_PORTS,
  MAX_WEBHOOK_URL_LENGTH,
  WebhookAddressBlockedError,
  createGuardedLookup,
  getBlockedAddressReason,
  isAllowedWebhookAddress,
  validateWebhookUrl,
} from './ssrf.js'
export type { GuardedLookupOptions, WebhookSsrfOptions, WebhookUrlCheck, WebhookUrlRefusal } from './ssrf.js'
export {
  CREDIT_ALERTS_RESET,
  CREDIT_LOW_THRESHOLDS,
  DEFAULT_PING_MESSAGE,
  WEBHOOK_API_VERSION,
  buildBulkCompletedEvent,
  buildCreditsAddedEvent,
  buildCreditsDepletedEvent,
  buildCreditsLowEvent,
  buildEvent,
  buildPingEvent,
  computeCreditAlert,
  createDeliveryId,
  createEventId,
  createWebhookSecret,
  matchesSubscription,
  parseEventSubscription,
} from './events.js'
export type {
  CreditAlert,
  CreditAlertState,
  CreditsAddedData,
  CreditsAddedReason,
  CreditsDepletedData,
  CreditsLowData,
  EventBase,
  PingData,
} from './events.js'
export {
  WEBHOOK_FORMATS,
  buildFormattedBody,
  defaultFormatForUrl,
  escapeDiscordText,
  escapeSlackText,
  formatEventLine,
} from './format.js'
export type { WebhookFormat } from './format.js'
export {
  DEFAULT_DELIVERY_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  WEBHOOK_USER_AGENT,
  buildDelivery,
  deliverWebhook,
} from './deliver.js'
export type { BuiltDelivery, DeliverWebhookOptions, DeliveryEndpoint, DeliveryError, DeliveryResult } from './deliver.js'
export {
  DELIVERY_LOG_RETENTION_MS,
  FAILING_WINDOW_MS,
  MAX_DELIVERY_ATTEMPTS,
  RETRY_DELAYS_MS,
  RETRY_SPAN_MS,
  nextAttemptAt,
  shouldDisable,
} from './schedule.js'
export type { DisableCheck, RetryJitterOptions } from './schedule.js'
export { createDeliveryWorker, enqueueEvent, pruneDeliveryLog, resendDeliveries } from './queue.js'
export type {
  DeliverFunction,
  DeliveryAttemptRecord,
  DeliveryRecord,
  DeliveryStatus,
  DeliveryStore,
  DeliveryUpdate,
  DeliveryWorker,
  DeliveryWorkerOptions,
  MaybePromise,
  QueueBase,
  TickResult,
  WebhookEndpointRecord,
} from './queue.js'
