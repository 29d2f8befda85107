/**
 * Sign-up (email, password, team name → a new team with the person as its owner, and a verification mail), the
 * verification link, sign-in with its rate limit, sign-out.
 */
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { DEFAULT_PLAN_ID } from '../../accounts/plans.js'
import { DashboardError, PRE_COOKIE, field, randomToken, sha256, type Dash } from '../context.js'
import { csrfField, html } from '../html.js'
import { nextMailText, type MailOutcome } from '../outbox.js'
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN, verifyPassword } from '../password.js'

/** Verification links stay valid for 2 days. */
const VERIFY_TTL_MS = 2 * 24 * 3600_000
// local part, then dot-separated labels (disjoint classes around each quantifier keep it linear-time)
const EMAIL = /^[^\s@<>()",;]{1,64}@[^\s@<>()",;.]+(?:\.[^\s@<>()",;.]+)+$/

/** A plausible email address, lower-cased, or null. */
export function normalEmail(s: string): string | null {
  const e = s.trim().toLowerCase()
  return e.length <= 254 && EMAIL.test(e) ? e : null
}

/** A safe in-dashboard path to go to after sign-in (anything else → /dashboard). */
function nextPath(s: string): string {
  return /^\/dashboard(\/[A-Za-z0-9_\-/.?=&%]*)?$/.test(s) && !s.includes('//') && !s.includes('..') ? s : '/dashboard'
}

/** Sends a verification link for `user` to their address, unless the mail throttle holds it back. */
export async function sendVerification(dash: Dash, user: { id: string; email: string }): Promise<MailOutcome> {
  return dash.outbox.send({ kind: 'verify', to: user.email, account: user.id }, async () => {
    const token = randomToken()
    const t = dash.nowMs()
    await dash.teams.createToken({ hash: sha256(token), kind: 'verify', userId: user.id, orgId: null, email: user.email, role: null, createdAt: t, expiresAt: t + VERIFY_TTL_MS })
    return {
      subject: 'Verify your email address for riskcheck',
      text:
        `Hello,\n\nfollow this link to verify ${user.email} (valid for 2 days):\n\n` +
        `${dash.outbox.link(`/dashboard/verify?token=${token}`)}\n\n` +
        'Until the address is verified your team can create test keys only.\n\nIf you did not sign up, ignore this mail.\n',
    }
  })
}

export function registerAuthPages(app: FastifyInstance, dash: Dash, limits: { loginAttempts: number; loginWindowMs: number }): void {
  const pre = (request: FastifyRequest) => request.cookies[PRE_COOKIE]

  const signinForm = (request: FastifyRequest, email = '', next = '/dashboard') => html`<div class="card narrow">
<form method="post" action="/dashboard/signin" class="stack">
${csrfField(pre(request))}
<input type="hidden" name="next" value="${nextPath(next)}">
<label><span>Email</span><input type="email" name="email" autocomplete="username" required value="${email}"></label>
<label><span>Password</span><input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
<p class="muted">New here? <a href="/dashboard/signup">Create a team</a></p>
</div>`

  const signupForm = (request: FastifyRequest, values: { email?: string; team?: string } = {}) => html`<div class="card narrow">
<form method="post" action="/dashboard/signup" class="stack">
${csrfField(pre(request))}
<label><span>Email</span><input type="email" name="email" autocomplete="username" required value="${values.email ?? ''}"></label>
<label><span>Password</span><input type="password" name="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" required>
<small class="muted">At least ${PASSWORD_MIN} characters.</small></label>
<label><span>Team name</span><input type="text" name="team" maxlength="100" required value="${values.team ?? ''}"></label>
<button type="submit">Create team</button>
</form>
<p class="muted">Have an account? <a href="/dashboard/signin">Sign in</a></p>
</div>`

  app.get('/signin', async (request: FastifyRequest<{ Querystring: { next?: string } }>, reply) => {
    if (await dash.viewer(request)) return reply.redirect('/dashboard')
    return dash.page(reply, { title: 'Sign in' }, signinForm(request, '', request.query.next ?? '/dashboard'))
  })

  app.post('/signin', async (request, reply) => {
    const email = field(request.body, 'email').toLowerCase().slice(0, 254)
    const password = field(request.body, 'password')
    const next = nextPath(field(request.body, 'next'))
    const t = dash.nowMs()
    const since = t - limits.loginWindowMs
    // per address, and (looser, since offices share an address) per client address
    const keys = [`email:${email}`, `ip:${request.ip}`]
    const limitOf = (k: string) => (k.startsWith('ip:') ? limits.loginAttempts * 10 : limits.loginAttempts)
    for (const k of keys) {
      if ((await dash.teams.loginFailures(k, since)) >= limitOf(k)) {
        void reply.header('Retry-After', String(Math.ceil(limits.loginWindowMs / 1000)))
        return dash.page(
          reply,
          { title: 'Sign in', flash: { kind: 'error', text: 'Too many failed sign-ins. Wait 15 minutes and try again.' } },
          signinForm(request, email, next),
          429,
        )
      }
    }
    const user = email ? await dash.teams.getUserByEmail(email) : null
    // Unknown addresses cost a hash too, so timing does not tell which addresses have an account.
    const ok = user ? await verifyPassword(password, user.passwordHash) : (await verifyPassword(password, DUMMY_HASH), false)
    if (!user || !ok) {
      for (const k of keys) await dash.teams.recordLoginFailure(k, t, since)
      return dash.page(reply, { title: 'Sign in', flash: { kind: 'error', text: 'Wrong email or password.' } }, signinForm(request, email, next), 401)
    }
    await dash.teams.clearLoginFailures(`email:${email}`)
    await dash.signIn(reply, request, user.id)
    return reply.redirect(next, 303)
  })

  app.get('/signup', async (request, reply) => {
    if (await dash.viewer(request)) return reply.redirect('/dashboard')
    return dash.page(reply, { title: 'Create your team' }, signupForm(request))
  })

  app.post('/signup', async (request, reply) => {
    const rawEmail = field(request.body, 'email')
    const email = normalEmail(rawEmail)
    const password = (request.body as Record<string, unknown>)?.password
    const team = field(request.body, 'team').replace(/\s+/g, ' ')
    const fail = (text: string, status = 422) =>
      dash.page(reply, { title: 'Create your team', flash: { kind: 'error', text } }, signupForm(request, { email: rawEmail, team }), status)
    if (!email) return fail('Enter a valid email address.')
    if (typeof password !== 'string' || password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
      return fail(`The password must have ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`)
    }
    if (team === '' || team.length > 100) return fail('Enter a team name of at most 100 characters.')
    const t = dash.nowMs()
    const taken = () => fail('An account with this email address exists already. Sign in instead.', 409)
    if (await dash.teams.getUserByEmail(email)) return taken()
    const passwordHash = await hashPassword(password)
    // The team first, then the person with their membership in one transaction: whatever fails, no account is left
    // half made and the address can sign up again (at worst an empty team without members stays behind).
    const org = await dash.svc.store.createOrg({ name: team, planId: DEFAULT_PLAN_ID }, t)
    const user = await dash.teams.createAccount({ id: `usr_${randomUUID().replace(/-/g, '')}`, email, passwordHash }, { orgId: org.id, role: 'owner' }, t)
    if (!user) return taken()
    await dash.signIn(reply, request, user.id)
    await sendVerification(dash, user).catch((err: unknown) => dash.log()?.warn({ err }, 'dashboard: verification mail failed'))
    return reply.redirect(`/dashboard/t/${encodeURIComponent(org.id)}/keys?done=signup`, 303)
  })

  app.get('/verify', async (request: FastifyRequest<{ Querystring: { token?: string } }>, reply: FastifyReply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : ''
    const record = token.length > 0 && token.length <= 100 ? await dash.teams.consumeToken(sha256(token), 'verify', dash.nowMs()) : null
    if (!record) throw new DashboardError(400, 'This verification link is not valid (it was used already or is older than 2 days). Sign in and ask for a new one.')
    await dash.teams.setEmailVerified(record.userId, dash.nowMs())
    const v = await dash.viewer(request)
    const who = v && v.user.id === record.userId ? { user: { email: v.user.email, verified: true }, csrf: v.session.csrf } : {}
    return dash.page(reply, { title: 'Email verified', ...who }, html`<div class="card narrow"><p>${record.email} is verified. Your team can now create live keys.</p>
<p><a class="button" href="/dashboard">Go to the dashboard</a></p></div>`)
  })

  // A new link, within the mail limits; the page says when the next one can be asked for.
  app.post('/verify/resend', async (request, reply) => {
    const v = await dash.viewer(request)
    if (!v) throw new DashboardError(401, 'Sign in first.')
    const who = { user: { email: v.user.email, verified: v.user.emailVerifiedAt !== null }, csrf: v.session.csrf }
    const back = html`<div class="card narrow"><p><a href="/dashboard">Back to the dashboard</a></p></div>`
    if (v.user.emailVerifiedAt !== null) return dash.page(reply, { title: 'Email verified', ...who, flash: { kind: 'ok', text: `${v.user.email} is verified already.` } }, back)
    const outcome = await sendVerification(dash, v.user)
    const now = dash.nowMs()
    if (!outcome.sent) {
      void reply.header('Retry-After', String(Math.max(1, Math.ceil((outcome.retryAt - now) / 1000))))
      const text = `We mailed verification links to ${v.user.email} a short while ago. You can ask for the next one at ${nextMailText(outcome.retryAt, now)}.`
      return dash.page(reply, { title: 'Verify your email address', ...who, flash: { kind: 'error', text } }, back, 429)
    }
    const next = outcome.nextAt > now ? ` If it does not arrive, you can ask for another at ${nextMailText(outcome.nextAt, now)}.` : ''
    return dash.page(reply, { title: 'Verify your email address', ...who, flash: { kind: 'ok', text: `We sent a new verification link to ${v.user.email}.${next}` } }, back)
  })

  app.post('/signout', async (request, reply) => {
    const raw = request.cookies.rc_session
    if (raw) await dash.teams.deleteSession(sha256(raw))
    void reply.clearCookie('rc_session', { path: '/dashboard' })
    return reply.redirect('/dashboard/signin', 303)
  })
}

/** A well-formed hash of a random password, checked when the address is unknown. */
const DUMMY_HASH = 'scrypt$32768$8$1$c2FsdHNhbHRzYWx0c2FsdA$' + 'A'.repeat(43)
