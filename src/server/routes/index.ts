/**
 * Every route module of the API, in registration (and documentation) order.
 */
import { accountRoutes } from './account.js'
import { bulkRoutes } from './bulk.js'
import { listRoutes } from './lists.js'
import { lookupRoutes } from './lookups.js'
import { metaRoutes } from './meta.js'
import { outcomeRoutes } from './outcomes.js'
import { reviewRoutes } from './reviews.js'
import type { RouteDef } from './types.js'
import { webhookRoutes } from './webhooks.js'

/** The routes of the API. */
export const ROUTES: RouteDef[] = [...lookupRoutes, ...bulkRoutes, ...outcomeRoutes, ...reviewRoutes, ...webhookRoutes, ...listRoutes, ...accountRoutes, ...metaRoutes]

export type { RouteDef, ServerContext } from './types.js'
