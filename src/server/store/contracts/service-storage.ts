/**
 * What the server's bulk and webhook services need of a database beyond the core store. The guarantees every engine
 * gives (checked by the contract suites of test/store-contract/): docs/decisions.md, "Storage engines".
 */
import type { BulkServiceStorage } from './bulk.js'
import type { DeliveryServiceStorage } from './deliveries.js'

export type { Awaitable } from '../../../awaitable.js'
export type { BulkOwner, BulkServiceStorage } from './bulk.js'
export type { DeliveryServiceStorage, EndpointDeliveryStore, NewEndpointInput, OperatorNotice, StoredEndpoint } from './deliveries.js'

/** The two storages a server runs its bulk and webhook services on. */
export interface ServiceStorage {
  bulk: BulkServiceStorage
  webhooks: DeliveryServiceStorage
}
