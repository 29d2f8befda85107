/**
 * The API's routes (../routes/index.ts: lookups, bulk jobs, webhook endpoints, account, meta), each registered from
 * its declaration: body, query and params validated by its TypeBox schemas, the answer serialized by its response
 * schema (in the `{ success, data }` envelope unless the route opts out), compressed bodies refused before parsing,
 * POST routes keyed by ./idempotency.ts. Each path's methods go to the 405 table of ./envelope.ts.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { ErrorEnvelopeSchema } from '../../schema.js'
import { refuseEncodedBody } from '../request-guards.js'
import { ROUTES } from '../routes/index.js'
import { EmptyBody, type NamedSchema, type RouteDef } from '../routes/types.js'
import type { RouteConfig, ServerParts } from './context.js'
import { idempotencyPreHandler } from './idempotency.js'
import { rootPlugin } from './root-plugin.js'

const isNamed = (r: NamedSchema | RouteDef['response']): r is NamedSchema =>
  typeof (r as NamedSchema).name === 'string' && typeof (r as NamedSchema).schema === 'object'

/**
 * The query of a keyed route that declares none: no parameter at all, so `POST /v1/email?smtp=false` is refused rather
 * than answered (and billed) as if the parameter had been read. Public routes (probes, pricing, the OpenAPI document)
 * stay lenient: a load balancer's or a cache-buster's parameter changes nothing there.
 */
const NoQuery = Type.Object({}, { additionalProperties: false })

/** The Fastify schema of a route: its inputs, its success answer and the error envelope. */
function routeSchema(route: RouteDef) {
  const payload = isNamed(route.response) ? route.response.schema : route.response
  const success = route.envelope === false ? payload : Type.Object({ success: Type.Literal(true), data: payload })
  const query = route.query ?? (route.scope !== null ? NoQuery : undefined)
  return {
    ...(route.body ? { body: route.body } : {}),
    ...(query ? { querystring: query } : {}),
    ...(route.params ? { params: route.params } : {}),
    response: { [route.status]: success, ...(route.probe ? { 503: success } : {}), '4xx': ErrorEnvelopeSchema, '5xx': ErrorEnvelopeSchema },
  }
}

/** Every route of {@link ROUTES}. */
export const routesPlugin = rootPlugin('riskcheck-routes', (app, parts: ServerParts) => {
  const { states, ctx, methods } = parts
  const idempotency = idempotencyPreHandler(parts)
  for (const route of ROUTES) {
    const config: RouteConfig = { scope: route.scope, ...(route.probe ? { probe: true } : {}) }
    app.route({
      method: route.method,
      url: route.url,
      ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
      config,
      schema: routeSchema(route),
      // Before the body is read: a compressed body is refused, whatever its size.
      preParsing: async (request: FastifyRequest) => refuseEncodedBody(request),
      // A route that takes no fields accepts no body at all as well as `{}`.
      ...(route.body === EmptyBody
        ? {
            preValidation: async (request: FastifyRequest) => {
              if (request.body === undefined) request.body = {}
            },
          }
        : {}),
      ...(route.method === 'POST' ? { preHandler: idempotency } : {}),
      handler: async (request, reply) => {
        void reply.code(route.status) // a handler may answer another status (GET /readyz: 503)
        const data = await route.handler({ body: request.body, query: request.query, params: request.params, auth: states.get(request)?.auth, request, reply, ctx })
        return route.envelope === false ? data : { success: true, data }
      },
    })
    methods.add(route.url, route.method)
  }
})
