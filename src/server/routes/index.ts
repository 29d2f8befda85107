/**
 * Every route module of the API, in registration (and documentation) order. The bulk-job and webhook-endpoint
 * modules of the next issue are added here — nothing else in the app changes.
 */
import { accountRoutes } from './account.js'
import { lookupRoutes } from './lookups.js'
import { metaRoutes } from './meta.js'
import type { RouteDef } from './types.js'

/** The routes of the API. */
export const ROUTES: RouteDef[] = [...lookupRoutes, ...accountRoutes, ...metaRoutes]

export type { RouteDef, ServerContext } from './types.js'
