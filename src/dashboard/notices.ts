/**
 * Endpoint-disabled notices (written by the webhook service) mailed to the team's owners and admins, through the
 * outbox like every mail (so within the notice limits; one over them is not mailed, and the endpoint's page shows it
 * disabled all the same). A stored cursor moves past a notice once its mails were handed to the relay, so a failed
 * send is retried next round and a restart does not mail twice what was sent before it.
 */
import type { FastifyInstance } from 'fastify'
import type { ServerContext } from '../server/routes/types.js'
import type { Mailer } from './mail.js'
import type { Outbox } from './outbox.js'
import type { TeamStore } from '../server/store/contracts/team-store.js'

const NOTICE_CURSOR = 'mailed_notice_id'

/** Mails pending notices every `everyMs` once the server is ready (0 = only when `mailNotices()` is called). */
export function startNoticeMail(o: {
  app: FastifyInstance
  svc: ServerContext
  teams: TeamStore
  outbox: Outbox
  mailer: Mailer
  nowMs: () => number
  everyMs: number
}): { mailNotices(): Promise<number>; close(): Promise<void> } {
  const { app, svc, teams, outbox } = o
  let mailing: Promise<number> | null = null
  const mailNoticesOnce = async (): Promise<number> => {
    const wh = svc.webhooks
    if (!wh || !o.mailer.configured) return 0
    const after = await teams.getCursor(NOTICE_CURSOR)
    const pending = (await wh.deliveries.listNotices(1000))
      .filter((n) => n.id > after)
      .sort((a, b) => a.id - b.id)
    let sent = 0
    for (const n of pending) {
      if (n.kind === 'webhook_endpoint_disabled' && n.orgId) {
        const orgId = n.orgId
        const org = await svc.store.getOrg(orgId, o.nowMs())
        const endpoint = await wh.deliveries.getStoredEndpoint(n.subject)
        const to = (await teams.listMembers(orgId)).filter((m) => m.role === 'owner' || m.role === 'admin').map((m) => m.email)
        for (const address of to) {
          const outcome = await outbox.send({ kind: 'notice', to: address, team: orgId }, () => ({
            subject: `Webhook endpoint disabled: ${endpoint?.url ?? n.subject}`,
            text:
              `Hello,\n\nthe webhook endpoint ${endpoint?.url ?? n.subject} (${n.subject}) of your team ${org?.name ?? orgId} was disabled on ` +
              `${new Date(n.at).toISOString()}: its deliveries have failed for a day.\n\n` +
              `Fix the receiver, then turn the endpoint back on and resend the missed deliveries on its page in the dashboard:\n` +
              `${outbox.link(`/dashboard/t/${encodeURIComponent(orgId)}/webhooks/${encodeURIComponent(n.subject)}`)}\n`,
          }))
          if (outcome.sent) sent++
          else app.log.warn({ org_id: orgId, notice: n.id }, 'dashboard: notice mail over the mail limit; not sent')
        }
      }
      await teams.setCursor(NOTICE_CURSOR, n.id)
    }
    return sent
  }
  const mailNotices = () => {
    mailing ??= mailNoticesOnce().finally(() => {
      mailing = null
    })
    return mailing
  }
  let timer: NodeJS.Timeout | undefined
  if (o.everyMs > 0) {
    app.addHook('onReady', async () => {
      timer = setInterval(() => void mailNotices().catch((err: unknown) => o.svc.noteOutage(err) || app.log.warn({ err }, 'dashboard: notice mail failed')), o.everyMs)
      timer.unref()
    })
  }
  return {
    mailNotices,
    async close() {
      if (timer) clearInterval(timer)
      await mailing?.catch(() => undefined)
    },
  }
}
