/**
 * The Fastify instance of the server: its transport limits (body size, request and header timeouts, header size),
 * the redacting logger (../log-redaction.ts), request ids, malformed HTTP answered on the socket
 * (../request-guards.ts), and router errors answered as the envelope (or the dashboard's page under /dashboard).
 */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import { newTimedRequestId } from '../../result.js'
import { errorEnvelope, mapError } from '../envelope.js'
import { redactingLoggerOptions } from '../log-redaction.js'
import { createClientErrorHandler, MAX_HEADER_BYTES } from '../request-guards.js'
import type { ServerParts } from './context.js'
import { createLazyCompilers } from './lazy-compilers.js'

/** Longest path parameter, percent-encoded (the longest list item value of docs/api.md, 1,200 characters × 9). */
const MAX_PARAM_LENGTH = 10_800

/** The server's Fastify instance, known to `parts.live` from here on. */
export function createFastify(parts: ServerParts): FastifyInstance {
  const { options, settings, live } = parts
  const { requestTimeout, docsUrl } = settings
  const compilers = createLazyCompilers()
  const app = Fastify({
    logger: redactingLoggerOptions(options.logger),
    bodyLimit: settings.bodyLimit,
    requestTimeout,
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: Math.min(60_000, requestTimeout),
      // How often Node looks for requests past their time (its default, 30 s, would let a short limit run long).
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(requestTimeout / 2))),
    },
    clientErrorHandler: createClientErrorHandler(docsUrl, () => live.app?.log),
    genReqId: () => newTimedRequestId(),
    return503OnClosing: false,
    trustProxy: options.trustProxy ?? false,
    // a list item's value is a path parameter of up to 1,200 characters, percent-encoded up to 9 bytes each (Fastify's
    // default of 100 answered 404 for a longer item that is on the list); ids stay bounded by their routes' schemas
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    schemaController: { compilersFactory: compilers.factory as never },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
    frameworkErrors(error, request, reply) {
      // an HTML page with the dashboard's headers for its paths (say, an id too long to route)
      const dashboard = live.dashboard
      if (dashboard && /^\/dashboard(\/|\?|$)/.test(request.url)) return void dashboard.sendError(error, request, reply as FastifyReply)
      const m = mapError(error)
      void (reply as FastifyReply).header('Cache-Control', 'no-store').code(m.status).send(errorEnvelope(m.code, m.message, request.id, docsUrl()))
    },
  })
  compilers.track(app)
  live.app = app
  return app
}
