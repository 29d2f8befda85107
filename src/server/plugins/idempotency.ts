/**
 * Idempotency-Key on POST routes (docs/api.md "Idempotency"): the preHandler takes the key (or replays the stored
 * answer, or refuses a key in use or used with another body); onSend stores the answer with the request's settlement
 * in one write, so a retry after a crash finds both or neither; onResponse and onRequestAbort free a key whose
 * answer was not stored. A database outage defers the record to its recovery.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { OrgLedger } from '../../accounts/ledger.js'
import { RiskcheckError } from '../../errors.js'
import { errorEnvelope } from '../envelope.js'
import { bodyFingerprint, IDEMPOTENCY_TTL_MS, inProgressConflict, isReplayable, parseIdempotencyKey } from '../idempotency.js'
import { sentHeader } from '../request-guards.js'
import type { IdemState, ServerParts } from './context.js'
import { reportError } from './envelope.js'
import { rootPlugin } from './root-plugin.js'

/**
 * The ledger of a keyed request whose settlement waits for the answer: `settle` (called by the route as the lookup
 * ends) is run by the onSend hook with the serialized answer, so the charge and the answer to replay are one write
 * and a retry after a crash either finds both or neither.
 */
export function settleWithAnswer(ledger: OrgLedger, idem: IdemState): OrgLedger {
  return {
    get charged() {
      return ledger.charged
    },
    holdsCredits: ledger.holdsCredits,
    reserve: (amount) => ledger.reserve(amount),
    refund: (amount) => ledger.refund(amount),
    balance: () => ledger.balance(),
    covers: (amount) => ledger.covers?.(amount) === true,
    deferWrites: (cache) => ledger.deferWrites(cache),
    async settle(lookups) {
      if (idem.done) return ledger.settle(lookups)
      idem.settle = (idempotent) => ledger.settle(lookups, idempotent)
      return false
    },
  }
}

/**
 * The request's path as its route reads it, parameters decoded: `/v1/%69p` is `/v1/ip`. The raw URL made every
 * percent-encoded spelling of one path a scope of its own, where a retry ran (and was charged) again.
 */
function routePath(request: FastifyRequest): string {
  const pattern = request.routeOptions.url
  if (pattern === undefined) return request.url.split('?')[0] ?? request.url
  const params = (request.params ?? {}) as Record<string, string | undefined>
  return pattern.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => params[name] ?? '')
}

/** The preHandler of POST routes (./routes.ts): takes the request's Idempotency-Key, or answers from it. */
export function idempotencyPreHandler(parts: ServerParts) {
  const { store, states, nowMs, lease } = parts
  return async (request: FastifyRequest, reply: FastifyReply) => {
    // as sent: Node joins two Idempotency-Key headers into one value, refused as malformed rather than as two
    const key = parseIdempotencyKey(sentHeader(request, 'idempotency-key'))
    const state = states.get(request)
    if (key === undefined || !state?.auth) return
    const scope = `${state.auth.key.id} ${request.method} ${routePath(request)}`
    const begin = await store.beginIdempotent(scope, key, bodyFingerprint(request.body), nowMs(), IDEMPOTENCY_TTL_MS, lease?.id)
    switch (begin.state) {
      case 'new':
        state.idem = { scope, key, done: false }
        return
      case 'mismatch':
        throw new RiskcheckError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key was already used with another request body.')
      case 'in_progress':
        throw inProgressConflict(begin.retryAfterMs)
      case 'replay':
        void reply.code(begin.status).header('Idempotent-Replayed', 'true').type('application/json; charset=utf-8')
        return reply.send(begin.body)
    }
  }
}

/** Stores the answer of a keyed request (with its settlement when it waits for it), or frees its key. */
async function finishIdempotent(parts: ServerParts, request: FastifyRequest, status: number, payload: unknown): Promise<void> {
  const { store, deps, lease } = parts
  const idem = parts.states.get(request)?.idem
  if (!idem || idem.done) return
  idem.done = true
  const replay = typeof payload === 'string' && isReplayable(status)
  // The settlement and the answer to replay in one write. A failure there answers its error instead: the request is
  // not charged (the lease's next renewal releases its hold) and its key is freed once the database is back.
  if (idem.settle && lease) {
    const owner = lease.id
    try {
      await idem.settle({ scope: idem.scope, key: idem.key, owner, ...(replay ? { status, body: payload } : {}) })
    } catch (e) {
      idem.after?.refused()
      if (deps.note(e)) deps.database.afterRecovery(async () => store.abandonIdempotent(idem.scope, idem.key, owner))
      throw e
    }
    idem.after?.settled()
    return
  }
  const write = () =>
    typeof payload === 'string' && replay ? store.completeIdempotent(idem.scope, idem.key, status, payload) : store.abandonIdempotent(idem.scope, idem.key)
  try {
    await write()
  } catch (e) {
    // The answer goes out all the same (it may be paid for); its record is written once the database is back.
    if (!deps.note(e)) throw e
    deps.database.afterRecovery(async () => write())
  }
}

/** Frees this instance's in-progress Idempotency-Key (a stored answer is never touched), after the outage if any. */
function releaseKey(parts: ServerParts, scope: string, key: string, owner: string | undefined): void {
  const { store, deps } = parts
  const write = async () => {
    await store.abandonIdempotent(scope, key, owner)
  }
  write().catch((e: unknown) => {
    if (deps.note(e)) deps.database.afterRecovery(write)
    else parts.live.app?.log.warn({ err: e }, 'freeing an Idempotency-Key failed')
  })
}

/** The hooks that end a keyed request: its answer stored (onSend), or its key freed (onResponse, onRequestAbort). */
export const idempotencyPlugin = rootPlugin('riskcheck-idempotency', (app, parts) => {
  app.addHook('onSend', async (request, reply, payload) => {
    try {
      await finishIdempotent(parts, request, reply.statusCode, payload)
      return payload
    } catch (error) {
      // The settlement (with the answer to replay) was not written: the request is answered its error, uncharged
      // (its hold is released by the lease), and its key is freed for the retry — now, or once the database is back.
      const idem = parts.states.get(request)?.idem
      if (idem) releaseKey(parts, idem.scope, idem.key, parts.lease?.id)
      const m = reportError(parts, error, request)
      void reply.code(m.status).headers(m.headers ?? {}).type('application/json; charset=utf-8')
      return JSON.stringify(errorEnvelope(m.code, m.message, request.id, parts.settings.docsUrl()))
    }
  })
  app.addHook('onResponse', async (request) => finishIdempotent(parts, request, 500, undefined))
  app.addHook('onRequestAbort', async (request) => finishIdempotent(parts, request, 500, undefined))
})
