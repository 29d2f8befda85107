/**
 * The error envelope: every failure of an API request — thrown by a hook or a handler, an unknown path (404), a
 * wrong method (405), a body that is not JSON or nests too deep — is answered `{ success: false, error }` with the
 * request id and a docs_url, its status and headers from ../envelope.ts. An outage of the database or Redis is
 * counted on its outage; anything unexpected is logged as an internal error.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { RiskcheckError } from '../../errors.js'
import { errorEnvelope, mapError, type MappedError } from '../envelope.js'
import { methodNotAllowed, registerJsonBodyParser } from '../request-guards.js'
import type { ServerParts } from './context.js'
import { rootPlugin } from './root-plugin.js'

/** Maps `error` and reports it: an outage counts one refused request of its dependency, an internal error is logged. */
export function reportError(parts: ServerParts, error: unknown, request: FastifyRequest): MappedError {
  const m = mapError(error)
  const { deps } = parts
  if (m.outage) {
    // the outage's own line says it once; each request answered 503 meanwhile is counted for its last line
    deps.note(error)
    ;(m.outage === 'database' ? deps.database : deps.redis)?.refused()
  }
  if (m.internal) request.log.error({ err: error }, 'internal error')
  return m
}

/** Answers `error` as the envelope. */
export function sendError(parts: ServerParts, error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const m = reportError(parts, error, request)
  if (m.headers) void reply.headers(m.headers)
  return reply.code(m.status).send(errorEnvelope(m.code, m.message, request.id, parts.settings.docsUrl()))
}

/** The error and not-found handlers of the root instance, and its JSON body parser. */
export const envelopePlugin = rootPlugin('riskcheck-envelope', (app, parts) => {
  registerJsonBodyParser(app)
  app.setErrorHandler((error, request, reply) => sendError(parts, error, request, reply))
  app.setNotFoundHandler((request, reply) => {
    const path = (request.url.split('?')[0] ?? '/').slice(0, 2048)
    const allowed = parts.methods.allowed(path)
    if (allowed) return sendError(parts, methodNotAllowed(request.method, path, allowed), request, reply)
    return sendError(parts, new RiskcheckError('NOT_FOUND', `No such endpoint: ${request.method} ${path}.`), request, reply)
  })
})
