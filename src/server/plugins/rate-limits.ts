/**
 * Rate limits and the first gate of every request: `Cache-Control: no-store`; probes pass untouched; while the server
 * drains or is in maintenance, 503 MAINTENANCE (the client address still counted); public routes are limited per
 * client address. Per-key limits are applied by ./auth.ts with {@link applyLimit}. The limiter is in memory, or
 * Redis's with `ServerOptions.queue` (each instance counting alone while Redis is down).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { RiskcheckError } from '../../errors.js'
import type { ServerOptions } from '../app.js'
import type { ServerDependencies } from '../dependencies.js'
import { markDependency } from '../outage.js'
import { createRedisRateLimiter } from '../queue/redis-rate-limit.js'
import { createRateLimiter, rateLimitHeaders, type RateLimiter, type RateLimitState } from '../rate-limit.js'
import type { LiveState, RouteConfig, ServerParts } from './context.js'
import { rootPlugin } from './root-plugin.js'

/** The server's limiter: `options.rateLimiter`, else Redis's with a queue, else one in memory. */
export function createServerRateLimiter(options: ServerOptions, redis: Redis | undefined, deps: ServerDependencies, live: LiveState): RateLimiter {
  const localLimiter = () => createRateLimiter(options.rateLimitNow ? { now: options.rateLimitNow } : {})
  if (options.rateLimiter) return options.rateLimiter
  if (!redis) return localLimiter()
  return createRedisRateLimiter({
    redis,
    prefix: `${options.queue?.prefix ?? 'riskcheck'}:`,
    // while Redis is down each instance counts alone
    fallback: localLimiter(),
    onError: (err) => deps.note(markDependency(err, 'redis')) || live.app?.log.warn({ err }, 'rate limiter: Redis failed; counted by this instance'),
  })
}

/** Sets the rate-limit headers of `state`; 429 RATE_LIMITED when it is spent. */
export function applyLimit(reply: FastifyReply, state: RateLimitState): void {
  void reply.headers(rateLimitHeaders(state))
  if (!state.allowed) {
    throw new RiskcheckError('RATE_LIMITED', `Too many requests: at most ${state.limit} in any second. Retry after ${state.resetSeconds} s.`)
  }
}

/** One request of the client address of `request` against the anonymous limit. */
export function hitAnonymous(parts: ServerParts, request: FastifyRequest): ReturnType<RateLimiter['hit']> {
  return parts.limiter.hit(`ip:${request.ip}`, parts.settings.anonRate, 'ip')
}

/** The first onRequest hook of every route. */
export const rateLimitPlugin = rootPlugin('riskcheck-rate-limits', (app, parts) => {
  const { options, live } = parts
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('Cache-Control', 'no-store')
    const config = request.routeOptions.config as RouteConfig | undefined
    // probes answer whatever the load (no rate limit) and while draining (/readyz then says `draining`)
    if (config?.probe) return
    if (live.closing || options.maintenance?.()) {
      void reply.headers(rateLimitHeaders(await hitAnonymous(parts, request)))
      if (live.closing) void reply.header('Connection', 'close')
      throw new RiskcheckError(
        'MAINTENANCE',
        live.closing ? 'The server is shutting down; retry shortly.' : 'The service is down for maintenance; retry shortly.',
      )
    }
    if (!config?.scope) applyLimit(reply, await hitAnonymous(parts, request))
  })
})
