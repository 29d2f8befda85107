/**
 * The team dashboard at /dashboard (README "Dashboard"), served by the API server in the same process over the
 * same store: sign-up with email verification, sign-in, API keys, usage and credits, bulk jobs, webhook endpoints,
 * members and invites, and a lookup playground.
 *
 * Safety, on every route: sessions in an httpOnly SameSite=Lax cookie (Secure over https) holding a random id of
 * which only the SHA-256 is stored; a CSRF token in every form (the session's, or before sign-in a double-submit
 * cookie), checked before any POST is handled; sign-in failures limited per address and per client; every team
 * page looked up through the viewer's membership (another team's ids answer 404); a Content-Security-Policy that
 * allows scripts and styles only from /dashboard/assets/ (no inline script); secrets (API keys, webhook signing
 * secrets) shown once in the response that created them and never stored or rendered again.
 */
import cookie from '@fastify/cookie'
import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ServerContext } from '../server/routes/types.js'
import { APP_CSS, APP_JS } from './assets.js'
import { attemptCounter } from './attempts.js'
import { DashboardError, MFA_COOKIE, PRE_COOKIE, SESSION_COOKIE, randomToken, sameToken, sha256, trimSlashes, type Dash, type TeamView, type Viewer } from './context.js'
import { html, layout } from './html.js'
import { createMailer, type Mailer } from './mail.js'
import { registerAccountPages, requireTwoFactor } from './pages/account.js'
import { registerAuthPages } from './pages/auth.js'
import { registerKeyPages } from './pages/keys.js'
import { registerWebhookPages } from './pages/webhooks.js'
import { registerBulkPages } from './pages/bulk.js'
import { registerMemberPages } from './pages/members.js'
import { registerPlaygroundPages } from './pages/playground.js'
import { registerUsagePages, registerUsageTally } from './pages/usage.js'
import { createMemoryTeamStore } from './store/memory.js'
import type { TeamStore } from './store/types.js'

/** Options of the dashboard (ServerOptions.dashboard). */
export interface DashboardOptions {
  /** The dashboard's store (default: SQLite in the service's database when it is SQLite, else in memory). */
  teamStore?: TeamStore
  /** SMTP relay for verification, invite and notice mails (`smtp://host:port`); none = mails are dropped and logged. */
  mailUrl?: string
  /** Replaces the mailer built from `mailUrl` (tests). */
  mailer?: Mailer
  /** Origin of links in mails (default: the origin of the request that caused the mail). */
  publicUrl?: string
  /** Session lifetime in ms (default 7 days). */
  sessionTtlMs?: number
  /** Failed sign-ins allowed per email address in `loginWindowMs` (default 5); ten times that per client address. */
  loginAttempts?: number
  /** Window of the sign-in limit (default 15 minutes). */
  loginWindowMs?: number
  /** How often operator notices (endpoints disabled) are mailed to owners and admins, in ms (default 5000; 0 = never). */
  noticeIntervalMs?: number
}

/** The running dashboard (for tests and the server's shutdown). */
export interface Dashboard {
  readonly teams: TeamStore
  readonly mailer: Mailer
  /** Mails pending notices now (the timer does it every `noticeIntervalMs`). */
  mailNotices(): Promise<number>
  close(): Promise<void>
}

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

/**
 * Registers the dashboard on `app` (under /dashboard) over the server's context. `teamStore` defaults as
 * documented on {@link DashboardOptions}; the caller passes the SQLite one when there is a database.
 */
export function registerDashboard(
  app: FastifyInstance,
  svc: ServerContext,
  options: DashboardOptions & { defaultTeamStore?: () => TeamStore },
): Dashboard {
  const teams = options.teamStore ?? options.defaultTeamStore?.() ?? createMemoryTeamStore()
  const log = () => app.log
  const mailer =
    options.mailer ??
    createMailer(options.mailUrl, (m) => app.log.warn({ mail_to: m.to, subject: m.subject }, 'dashboard: no --mail-url configured; mail not sent'))
  const sessionTtl = options.sessionTtlMs ?? 7 * 24 * 3600_000
  const nowMs = () => svc.nowMs()

  const readViewer = async (request: FastifyRequest): Promise<Viewer | null> => {
    const raw = request.cookies[SESSION_COOKIE]
    if (!raw || raw.length > 100) return null
    const session = await teams.getSession(sha256(raw), nowMs())
    if (!session) return null
    const user = await teams.getUser(session.userId)
    return user ? { user, session } : null
  }
  const viewers = new WeakMap<FastifyRequest, Promise<Viewer | null>>()
  const viewer = (request: FastifyRequest) => {
    let v = viewers.get(request)
    if (!v) viewers.set(request, (v = readViewer(request)))
    return v
  }

  const dash: Dash = {
    svc,
    teams,
    mailer,
    nowMs,
    log,
    viewer,
    async team(request, orgId, min = 'developer'): Promise<TeamView> {
      const v = await viewer(request)
      if (!v) throw new DashboardError(401, 'Sign in first.')
      const member = await teams.getMember(orgId, v.user.id)
      const org = member ? await svc.store.getOrg(orgId, nowMs()) : null
      if (!member || !org) throw new DashboardError(404, 'Not found.')
      const order = { developer: 1, admin: 2, owner: 3 } as const
      if (order[member.role] < order[min]) throw new DashboardError(403, `This needs the ${min} role; you are a ${member.role}.`)
      await requireTwoFactor(teams, v.user, org)
      const list: Array<{ id: string; name: string }> = []
      for (const m of await teams.listMemberships(v.user.id)) {
        const o = m.orgId === org.id ? org : await svc.store.getOrg(m.orgId, nowMs())
        if (o) list.push({ id: o.id, name: o.name })
      }
      return { ...v, org, member, teams: list, base: `/dashboard/t/${encodeURIComponent(org.id)}` }
    },
    page(reply, ctx, body, status = 200) {
      return reply.code(status).type('text/html; charset=utf-8').send(layout(ctx, body))
    },
    teamLayout(v, title, nav, flash) {
      return {
        title,
        nav,
        csrf: v.session.csrf,
        user: { email: v.user.email, verified: v.user.emailVerifiedAt !== null },
        team: { id: v.org.id, name: v.org.name, role: v.member.role },
        teams: v.teams,
        flash,
      }
    },
    origin(request) {
      if (options.publicUrl) return trimSlashes(options.publicUrl)
      return `${request.protocol}://${request.host}`
    },
    async signIn(reply, request, userId) {
      const id = randomToken()
      const t = nowMs()
      await teams.createSession({ idHash: sha256(id), userId, csrf: randomToken(), createdAt: t, expiresAt: t + sessionTtl })
      void reply.setCookie(SESSION_COOKIE, id, {
        path: '/dashboard',
        httpOnly: true,
        sameSite: 'lax',
        secure: request.protocol === 'https',
        maxAge: Math.floor(sessionTtl / 1000),
      })
      void reply.clearCookie(PRE_COOKIE, { path: '/dashboard' })
      void reply.clearCookie(MFA_COOKIE, { path: '/dashboard' })
    },
    ...attemptCounter(teams, nowMs, options),
  }

  const tally = registerUsageTally(svc, teams, app.log)

  void app.register(
    async (scope) => {
      await scope.register(cookie)
      // Forms get the server's body limit (64 KiB by default); the bulk job form alone takes up to 32 MiB.
      await scope.register(formbody)

      scope.addHook('onRequest', async (request, reply) => {
        void reply.headers({
          'Content-Security-Policy': CSP,
          'X-Frame-Options': 'DENY',
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'same-origin',
          'Cross-Origin-Opener-Policy': 'same-origin',
        })
      })

      // CSRF: every POST carries the session's token, or (signed out) the double-submit cookie's value.
      scope.addHook('preHandler', async (request, reply) => {
        if (request.method !== 'POST') {
          // signed out: also with a session cookie whose session ended (signed out everywhere, password reset)
          if (!request.cookies[PRE_COOKIE] && !(await viewer(request))) {
            const pre = randomToken()
            request.cookies[PRE_COOKIE] = pre
            void reply.setCookie(PRE_COOKIE, pre, { path: '/dashboard', httpOnly: true, sameSite: 'strict', secure: request.protocol === 'https' })
          }
          return
        }
        const sent = (request.body as Record<string, unknown> | undefined)?._csrf
        const v = await viewer(request)
        const expected = v ? v.session.csrf : request.cookies[PRE_COOKIE]
        if (!sameToken(typeof sent === 'string' ? sent : undefined, expected)) {
          throw new DashboardError(403, 'This form has expired or did not come from this dashboard. Go back, reload the page and try again.')
        }
      })

      scope.setErrorHandler(async (error, request, reply) => {
        const e = error as Error & { statusCode?: number }
        if (error instanceof DashboardError && error.location && request.method === 'GET') return reply.redirect(error.location, 303)
        let status = error instanceof DashboardError ? error.status : typeof e.statusCode === 'number' && e.statusCode < 500 ? e.statusCode : 500
        if (status === 401) {
          if (request.method === 'GET') return reply.redirect(`/dashboard/signin?next=${encodeURIComponent(request.url.slice(0, 500))}`)
          status = 403
        }
        if (status >= 500) request.log.error({ err: error }, 'dashboard error')
        const message = status >= 500 ? 'Something went wrong on our side; try again.' : e.message
        const v = await viewer(request).catch(() => null)
        return dash.page(
          reply,
          { title: status === 404 ? 'Not found' : 'Not possible', ...(v ? { user: { email: v.user.email, verified: v.user.emailVerifiedAt !== null }, csrf: v.session.csrf } : {}) },
          html`<div class="card"><p>${status === 404 ? 'There is nothing here, or it belongs to a team you are not in.' : message}</p>
<p><a href="/dashboard">Back to the dashboard</a></p></div>`,
          status,
        )
      })

      scope.setNotFoundHandler(async (request) => {
        throw new DashboardError(404, `No page ${request.url.split('?')[0]!.slice(0, 200)}.`)
      })

      scope.get('/assets/app.css', async (_request, reply) => reply.type('text/css; charset=utf-8').header('Cache-Control', 'public, max-age=300').send(APP_CSS))
      scope.get('/assets/app.js', async (_request, reply) =>
        reply.type('text/javascript; charset=utf-8').header('Cache-Control', 'public, max-age=300').send(APP_JS),
      )

      scope.get('/', async (request, reply) => {
        const v = await viewer(request)
        if (!v) return reply.redirect('/dashboard/signin')
        const first = (await teams.listMemberships(v.user.id))[0]
        if (!first) return dash.page(reply, { title: 'No team', user: { email: v.user.email, verified: v.user.emailVerifiedAt !== null }, csrf: v.session.csrf }, html`<div class="card"><p>You are not a member of any team. Ask a team owner for an invitation.</p></div>`)
        return reply.redirect(`/dashboard/t/${encodeURIComponent(first.orgId)}/keys`)
      })
      scope.get('/t/:org', async (request: FastifyRequest<{ Params: { org: string } }>, reply: FastifyReply) => {
        const v = await dash.team(request, request.params.org)
        return reply.redirect(`${v.base}/keys`)
      })

      registerAuthPages(scope, dash)
      registerAccountPages(scope, dash)
      registerKeyPages(scope, dash)
      registerWebhookPages(scope, dash)
      registerUsagePages(scope, dash, tally)
      registerBulkPages(scope, dash)
      registerMemberPages(scope, dash)
      registerPlaygroundPages(scope, dash, app)
    },
    { prefix: '/dashboard' },
  )

  // Endpoint-disabled notices (written by the webhook service) are mailed to the team's owners and admins. The
  // cursor moves past a notice once its mails were accepted by the relay, so a failed send is retried next round
  // and a restart does not mail twice what was sent before it.
  const NOTICE_CURSOR = 'mailed_notice_id'
  let mailing: Promise<number> | null = null
  const mailNoticesOnce = async (): Promise<number> => {
    const wh = svc.webhooks
    if (!wh || !mailer.configured) return 0
    const after = await teams.getCursor(NOTICE_CURSOR)
    const pending = (await wh.deliveries.listNotices(1000))
      .filter((n) => n.id > after)
      .sort((a, b) => a.id - b.id)
    let sent = 0
    for (const n of pending) {
      if (n.kind === 'webhook_endpoint_disabled' && n.orgId) {
        const org = await svc.store.getOrg(n.orgId, nowMs())
        const endpoint = await wh.deliveries.getStoredEndpoint(n.subject)
        const to = (await teams.listMembers(n.orgId)).filter((m) => m.role === 'owner' || m.role === 'admin').map((m) => m.email)
        for (const address of to) {
          await mailer.send({
            to: address,
            subject: `Webhook endpoint disabled: ${endpoint?.url ?? n.subject}`,
            text:
              `Hello,\n\nthe webhook endpoint ${endpoint?.url ?? n.subject} (${n.subject}) of your team ${org?.name ?? n.orgId} was disabled on ` +
              `${new Date(n.at).toISOString()}: its deliveries have failed for a day.\n\n` +
              `Fix the receiver, then turn the endpoint back on and resend the missed deliveries on its page in the dashboard:\n` +
              `${options.publicUrl ? trimSlashes(options.publicUrl) : ''}/dashboard/t/${n.orgId}/webhooks/${n.subject}\n`,
          })
          sent++
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
  const noticeEvery = options.noticeIntervalMs ?? 5000
  let noticeTimer: NodeJS.Timeout | undefined
  if (noticeEvery > 0) {
    app.addHook('onReady', async () => {
      noticeTimer = setInterval(() => void mailNotices().catch((err: unknown) => app.log.warn({ err }, 'dashboard: notice mail failed')), noticeEvery)
      noticeTimer.unref()
    })
  }
  // Expired sessions and links, and sign-in failures older than a day, are deleted hourly.
  const purgeTimer = setInterval(() => {
    const t = nowMs()
    Promise.resolve(teams.purgeExpired(t, t - 24 * 3600_000)).catch((err: unknown) => app.log.warn({ err }, 'dashboard: purge failed'))
  }, 3600_000)
  purgeTimer.unref()

  return {
    teams,
    mailer,
    mailNotices,
    async close() {
      if (noticeTimer) clearInterval(noticeTimer)
      clearInterval(purgeTimer)
      await mailing?.catch(() => undefined)
      mailer.close()
      await tally.close()
      await teams.close()
    },
  }
}
