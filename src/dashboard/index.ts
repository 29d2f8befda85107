/**
 * The team dashboard at /dashboard (docs/dashboard.md), served by the API server in the same process over the same
 * store: sign-up and sign-in, password reset, API keys, usage and credits, bulk jobs, webhook endpoints, members and
 * invites, and a lookup playground. The safety rules every route keeps: docs/decisions.md, "Team dashboard".
 */
import cookie from '@fastify/cookie'
import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { RiskcheckError } from '../errors.js'
import { OUTAGE_RETRY_AFTER_SECONDS, outageOf } from '../server/outage.js'
import { isWildcardAddress, listenUrl } from '../server/public-url.js'
import type { ServerContext } from '../server/routes/types.js'
import { APP_CSS, APP_JS, FAVICON_SVG } from './assets.js'
import { attemptCounter } from './attempts.js'
import { DashboardError, MFA_COOKIE, PRE_COOKIE, SESSION_COOKIE, randomToken, sameToken, sha256, type Dash, type TeamView, type Viewer } from './context.js'
import { requestTextProblem } from './forms.js'
import { html, layout } from './html.js'
import { createMailer, type Mailer } from './mail.js'
import { startNoticeMail } from './notices.js'
import { checkMailLimits, createOutbox, type MailKind, type MailLimit, type Outbox } from './outbox.js'
import { registerAccountPages, requireTwoFactor } from './pages/account.js'
import { registerAuthPages } from './pages/auth.js'
import { registerKeyPages } from './pages/keys.js'
import { registerWebhookPages } from './pages/webhooks.js'
import { registerListPages } from './pages/lists.js'
import { registerReviewPages } from './pages/reviews.js'
import { registerPolicyPages } from './pages/policy.js'
import { registerBulkPages } from './pages/bulk.js'
import { registerMemberPages } from './pages/members.js'
import { registerPlaygroundPages } from './pages/playground.js'
import { registerUsagePages, registerUsageTally } from './pages/usage.js'
import { createMemoryTeamStore } from '../server/store/sqlite/memory.js'
import type { TeamStore } from '../server/store/contracts/team-store.js'

/** Options of the dashboard (ServerOptions.dashboard). */
export interface DashboardOptions {
  /** The dashboard's store (default: SQLite in the service's database when it is SQLite, else in memory). */
  teamStore?: TeamStore
  /** SMTP relay for verification, invite and notice mails (`smtp://host:port`); none = mails are dropped and logged. */
  mailUrl?: string
  /** Replaces the mailer built from `mailUrl` (tests). */
  mailer?: Mailer
  /**
   * Limits of the mail throttle per kind, replacing the defaults of that kind (`MAIL_LIMITS` of ./outbox.ts). Links in
   * mails are built from the server's `publicUrl`, else its listen address.
   */
  mailLimits?: Partial<Record<MailKind, readonly MailLimit[]>>
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
  /** Answers an error of a /dashboard request with the dashboard's error page (errors the router raises before routing). */
  sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>
  close(): Promise<void>
}

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

/**
 * The files under /dashboard/assets/, each with an ETag (a revalidation answers 304). Style and script are cached
 * five minutes, so a new version reaches open browsers soon; the icon a day.
 */
const ASSETS = [
  { name: 'app.css', type: 'text/css; charset=utf-8', body: APP_CSS, maxAge: 300 },
  { name: 'app.js', type: 'text/javascript; charset=utf-8', body: APP_JS, maxAge: 300 },
  { name: 'favicon.svg', type: 'image/svg+xml', body: FAVICON_SVG, maxAge: 86_400 },
].map((a) => ({ ...a, etag: `"${sha256(a.body).slice(0, 16)}"` }))

/** The headers of every dashboard answer. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CSP,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
}

/**
 * Registers the dashboard on `app` (under /dashboard) over the server's context. `teamStore` defaults as
 * documented on {@link DashboardOptions}; the caller passes the SQLite one when there is a database.
 */
export function registerDashboard(
  app: FastifyInstance,
  svc: ServerContext,
  options: DashboardOptions & { defaultTeamStore?: () => TeamStore; publicUrl?: string },
): Dashboard {
  if (options.mailLimits) checkMailLimits(options.mailLimits)
  const teams = options.teamStore ?? options.defaultTeamStore?.() ?? createMemoryTeamStore()
  const mailer =
    options.mailer ??
    createMailer(options.mailUrl, (m) => app.log.warn({ mail_to: m.to, subject: m.subject }, 'dashboard: no --mail-url configured; mail not sent'))
  const nowMs = () => svc.nowMs()
  const outbox = createOutbox({ teams, mailer, nowMs, base: linkBaseOf(app, options.publicUrl, mailer), ...(options.mailLimits ? { limits: options.mailLimits } : {}) })
  const dash = createDash(app, svc, teams, outbox, options)
  const { viewer } = dash

  const errorPage = errorPageOf(dash, svc)

  const tally = registerUsageTally(svc, teams, app.log)

  void app.register(
    async (scope) => {
      await scope.register(cookie)
      // Forms get the server's body limit (64 KiB by default); the bulk job form alone takes up to 32 MiB.
      await scope.register(formbody)

      addGuards(scope, viewer)

      scope.setErrorHandler(errorPage)

      scope.setNotFoundHandler(async (request) => {
        throw new DashboardError(404, `No page ${request.url.split('?')[0]!.slice(0, 200)}.`)
      })

      for (const a of ASSETS) {
        scope.get(`/assets/${a.name}`, async (request, reply) => {
          void reply.type(a.type).header('Cache-Control', `public, max-age=${a.maxAge}`).header('ETag', a.etag)
          return request.headers['if-none-match'] === a.etag ? reply.code(304).send() : reply.send(a.body)
        })
      }

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
      registerListPages(scope, dash)
      registerReviewPages(scope, dash)
      registerPolicyPages(scope, dash)
      registerUsagePages(scope, dash, tally)
      registerBulkPages(scope, dash)
      registerMemberPages(scope, dash)
      registerPlaygroundPages(scope, dash, app)
    },
    { prefix: '/dashboard', name: 'riskcheck-dashboard' },
  )

  const notices = startNoticeMail({ app, svc, teams, outbox, mailer, nowMs, everyMs: options.noticeIntervalMs ?? 5000 })
  const purgeTimer = startPurge(teams, nowMs, app, svc)

  return {
    teams,
    mailer,
    mailNotices: notices.mailNotices,
    sendError: errorPage,
    async close() {
      clearInterval(purgeTimer)
      await notices.close()
      mailer.close()
      await tally.close()
      await teams.close()
    },
  }
}

/**
 * The {@link Dash} every page handler gets: the viewer of a request (its session, read once per request), the team
 * view with its membership, role and two-factor checks, page rendering, signing in, and the attempt counter.
 */
function createDash(app: FastifyInstance, svc: ServerContext, teams: TeamStore, outbox: Outbox, options: DashboardOptions): Dash {
  const nowMs = () => svc.nowMs()
  const sessionTtl = options.sessionTtlMs ?? 7 * 24 * 3600_000

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

  return {
    svc,
    teams,
    outbox,
    nowMs,
    log: () => app.log,
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
}

/**
 * The error page of every refusal under /dashboard, with the security headers (it also answers errors the router
 * raises before any hook of the dashboard runs: an id too long to route, a malformed URL). The server's own refusals
 * (429 over the per-client limit, 503 while draining) keep their status and say why, and so does an outage of the
 * database (503 with Retry-After, ../server/outage.ts); a 401 sends a GET to sign-in, and a refusal with a `location`
 * (a team that requires two-factor sign-in) sends a GET there.
 */
function errorPageOf(dash: Pick<Dash, 'viewer' | 'page'>, svc: Pick<ServerContext, 'noteOutage'>) {
  return async (thrown: unknown, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    void reply.headers(SECURITY_HEADERS)
    const outage = outageOf(thrown)
    if (outage) {
      svc.noteOutage(thrown)
      void reply.header('Retry-After', String(OUTAGE_RETRY_AFTER_SECONDS))
    }
    const error = outage
      ? new RiskcheckError('UPSTREAM_UNAVAILABLE', `The service cannot reach its ${outage === 'database' ? 'database' : 'queue'} right now; try again in a few seconds.`)
      : thrown
    if (error instanceof DashboardError && error.location && request.method === 'GET') return reply.redirect(error.location, 303)
    const e = error as Error & { statusCode?: number; code?: string }
    const told = error instanceof RiskcheckError && (error.status < 500 || error.code === 'MAINTENANCE' || error.code === 'UPSTREAM_UNAVAILABLE')
    const routed = e.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 404 : e.code === 'FST_ERR_BAD_URL' ? 400 : undefined
    let status =
      error instanceof DashboardError
        ? error.status
        : told
          ? error.status
          : (routed ?? (typeof e.statusCode === 'number' && e.statusCode < 500 ? e.statusCode : 500))
    if (status === 401) {
      if (request.method === 'GET') return reply.redirect(`/dashboard/signin?next=${encodeURIComponent(request.url.slice(0, 500))}`)
      status = 403
    }
    const ours = status >= 500 && !told && !(error instanceof DashboardError)
    if (ours) request.log.error({ err: error }, 'dashboard error')
    if (error instanceof RiskcheckError && error.code === 'MAINTENANCE') void reply.header('Retry-After', '30')
    const message = ours ? 'Something went wrong on our side; try again.' : routed === 400 ? 'The URL is malformed.' : e.message
    // over the limit, the session is not read: the answer costs nothing; nor during an outage: it cannot be read
    const v = status === 429 || outage ? null : await dash.viewer(request).catch(() => null)
    const title = status === 404 ? 'Not found' : status === 429 ? 'Too many requests' : status === 503 ? 'Temporarily unavailable' : 'Not possible'
    return dash.page(
      reply,
      { title, ...(v ? { user: { email: v.user.email, verified: v.user.emailVerifiedAt !== null }, csrf: v.session.csrf } : {}) },
      html`<div class="card"><p>${status === 404 ? 'There is nothing here, or it belongs to a team you are not in.' : message}</p>
<p><a href="/dashboard">Back to the dashboard</a></p></div>`,
      status,
    )
  }
}

/**
 * The hooks every dashboard request passes: the security headers on every answer, whatever made it (a page, a
 * redirect, an error page, the server's rate limit — whose 429 is thrown before any hook of this scope runs — or a
 * refused body); then, before any handler, the text rule on params, query and form fields (no handler reads a control
 * character), and CSRF: every POST carries the session's token, or (signed out) the double-submit cookie's value.
 */
function addGuards(scope: FastifyInstance, viewer: (request: FastifyRequest) => Promise<Viewer | null>): void {
  scope.addHook('onSend', async (_request, reply, payload) => {
    void reply.headers(SECURITY_HEADERS)
    return payload
  })
  scope.addHook('preHandler', async (request, reply) => {
    const problem = requestTextProblem(request)
    if (problem) throw new DashboardError(400, problem)
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
}

/**
 * The origin of links in mails: the public URL, else the address `app` listens on (a wildcard address gets a warning
 * at start when mail is configured); never a request header. Throws a 503 when there is neither.
 */
function linkBaseOf(app: FastifyInstance, publicUrl: string | undefined, mailer: Mailer): () => string {
  if (publicUrl) return () => publicUrl
  app.addHook('onListen', async () => {
    const a = app.server.address()
    if (mailer.configured && a && typeof a === 'object' && isWildcardAddress(a.address)) {
      app.log.warn(`dashboard: links in mails point at ${listenUrl(a)}, the listen address, which other machines cannot open: set --public-url (RISKCHECK_PUBLIC_URL)`)
    }
  })
  return () => {
    const a = app.server.address()
    if (a && typeof a === 'object') return listenUrl(a)
    throw new DashboardError(503, 'This server cannot mail links: it has no public URL and does not listen on an address (the operator sets --public-url or publicUrl).')
  }
}

/** Deletes expired sessions and links, and sign-in failures and counted mails older than a day, every hour. */
function startPurge(teams: TeamStore, nowMs: () => number, app: FastifyInstance, svc: ServerContext): NodeJS.Timeout {
  const timer = setInterval(() => {
    const t = nowMs()
    Promise.resolve(teams.purgeExpired(t, t - 24 * 3600_000)).catch((err: unknown) => svc.noteOutage(err) || app.log.warn({ err }, 'dashboard: purge failed'))
  }, 3600_000)
  timer.unref()
  return timer
}
