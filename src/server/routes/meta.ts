/**
 * Public routes: GET /v1/pricing (plans and per-product credit costs; not wrapped in the envelope, as the spec says)
 * and GET /v1/openapi.json (the OpenAPI 3.1 document generated from the route declarations).
 */
import { Type } from '@sinclair/typebox'
import { PricingSchema } from '../../schema.js'
import { pricingOf } from '../plans.js'
import { defineRoute, type RouteDef } from './types.js'

/** The public routes. */
export const metaRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    url: '/v1/pricing',
    operationId: 'get_pricing',
    summary: 'Plans and per-product credit costs',
    description: 'Public. The body is the pricing object itself, not wrapped in success/data.',
    tags: ['Account'],
    scope: null,
    status: 200,
    envelope: false,
    response: { name: 'Pricing', schema: PricingSchema },
    errors: [],
    handler: ({ ctx }) => pricingOf(ctx.plans, ctx.products),
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/openapi.json',
    operationId: 'get_openapi',
    summary: 'This API as an OpenAPI 3.1 document',
    tags: ['Meta'],
    scope: null,
    status: 200,
    envelope: false,
    response: Type.Object({ openapi: Type.Literal('3.1.0') }, { additionalProperties: true, description: 'An OpenAPI 3.1 document.' }),
    errors: [],
    handler: ({ ctx }) => ctx.openapi(),
  }),
]
