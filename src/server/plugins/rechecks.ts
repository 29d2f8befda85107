/**
 * Rechecks of deferred email answers in the server (../recheck-service.ts, docs/rechecks.md): the service over the
 * engine's `email_rechecks` table, scoring as each org's answers are (../org-answer.ts), rewriting bulk rows through the owner's job store
 * and completing jobs that wait in `rechecking`. ./lifecycle.ts starts and stops its timer.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Riskcheck } from '../../riskcheck.js'
import type { ServerOptions } from '../app.js'
import type { BulkService } from '../bulk-service.js'
import { orgAnswerEnv, type OrgAnswerParts } from '../org-answer.js'
import { createRecheckService, recheckSettings, type RecheckService } from '../recheck-service.js'
import type { ServiceStorage } from '../store/contracts/service-storage.js'

/** The recheck service of a server, or undefined when `recheck: false`. A TypeError for bad options. */
export function createServerRechecks(o: {
  options: ServerOptions
  service: ServiceStorage
  rc: Riskcheck
  nowMs: () => number
  org: OrgAnswerParts
  bulk: BulkService
  backgroundLog: () => FastifyBaseLogger | undefined
}): RecheckService | undefined {
  const settings = recheckSettings(o.options.recheck)
  if (!settings) return undefined
  const { service, bulk } = o
  return createRecheckService(
    {
      store: service.rechecks,
      liveEnv: o.rc.env,
      orgEnv: (owner, labels) => orgAnswerEnv(o.org, owner, labels),
      jobStore: (owner) => service.bulk.jobStore(owner),
      finishRechecked: (owner, jobId) => bulk.engineFor(owner).finishRechecked(jobId),
      nowMs: o.nowMs,
      warn: (fields, message) => o.backgroundLog()?.warn(fields, message),
    },
    settings,
  )
}
