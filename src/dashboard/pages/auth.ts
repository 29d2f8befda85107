/**
 * Sign-up (email, password, team name → a new team with the person as its owner, written all or nothing, and a
 * verification mail), the verification link, sign-in with its rate limit, sign-out. Sign-up answers the same whether
 * or not the address has an account (the owner of an address that has one gets a mail instead), so it never tells who
 * has an account. Every mail goes through the outbox (throttled; links from the public URL).
 */
import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { DEFAULT_PLAN_ID } from '../../accounts/plans.js'
import { DashboardError, PRE_COOKIE, doneFlash, field, passwordField, randomToken, sha256, type Dash } from '../context.js'
import { csrfField, html } from '../html.js'
import { mailAfterAnswer, nextMailText, type MailOutcome } from '../outbox.js'
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN, verifyPassword } from '../password.js'
import type { UserRecord } from '../../server/store/contracts/team-store.js'
import { afterPassword, nextPath } from './second-factor.js'

/** Verification links stay valid for 2 days. */
const VERIFY_TTL_MS = 2 * 24 * 3600_000
// local part, then dot-separated labels (disjoint classes around each quantifier keep it linear-time)
const EMAIL = /^[^\s@<>()",;]{1,64}@[^\s@<>()",;.]+(?:\.[^\s@<>()",;.]+)+$/

/** A plausible email address, lower-cased, or null. */
export function normalEmail(s: string): string | null {
  const e = s.trim().toLowerCase()
  return e.length <= 254 && EMAIL.test(e) ? e : null
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

/**
 * Tells the owner of an address that someone tried to sign up with it (instead of telling the one who tried), unless
 * the mail throttle holds it back (kind `signup`: counted per address, so repeated attempts do not flood its owner).
 */
async function sendSignupAttempt(dash: Dash, email: string): Promise<MailOutcome> {
  return dash.outbox.send({ kind: 'signup', to: email }, () => ({
    subject: 'Someone tried to sign up for riskcheck with your address',
    text:
      `Hello,\n\nsomeone (maybe you) tried to create a riskcheck team with ${email}, which has an account already.\n\n` +
      `If it was you, sign in:\n\n${dash.outbox.link('/dashboard/signin')}\n\n` +
      `Forgot your password? Set a new one here:\n\n${dash.outbox.link('/dashboard/reset')}\n\n` +
      'If it was not you, ignore this mail: nothing changed.\n',
  }))
}

export function registerAuthPages(app: FastifyInstance, dash: Dash): void {
  registerVerifyPages(app, dash)
  const pre = (request: FastifyRequest) => request.cookies[PRE_COOKIE]

  const signinForm = (request: FastifyRequest, email = '', next = '/dashboard') => html`<div class="card narrow">
<form method="post" action="/dashboard/signin" class="stack">
${csrfField(pre(request))}
<input type="hidden" name="next" value="${nextPath(next)}">
<label><span>Email</span><input type="email" name="email" autocomplete="username" required value="${email}"></label>
<label><span>Password</span><input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
<p class="muted"><a href="/dashboard/reset">Forgot your password?</a></p>
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

  app.get('/signin', async (request: FastifyRequest<{ Querystring: { next?: string; done?: string } }>, reply) => {
    if (await dash.viewer(request)) return reply.redirect('/dashboard')
    return dash.page(reply, { title: 'Sign in', flash: doneFlash(request.query) }, signinForm(request, '', request.query.next ?? '/dashboard'))
  })

  app.post('/signin', async (request, reply) => {
    const email = field(request.body, 'email').toLowerCase().slice(0, 254)
    const password = passwordField(request.body, 'password')
    const next = nextPath(field(request.body, 'next'))
    // Counted before the hash (which takes ~100 ms): a burst of parallel guesses gets no more than the limit checked.
    // Per address, and (looser, since offices share an address) per client address.
    const attempt = await dash.takeAttempt([`email:${email}`, `ip:${request.ip}`])
    if (!attempt) {
      void reply.header('Retry-After', String(dash.retryAfter))
      return dash.page(
        reply,
        { title: 'Sign in', flash: { kind: 'error', text: 'Too many failed sign-ins. Wait 15 minutes and try again.' } },
        signinForm(request, email, next),
        429,
      )
    }
    const user = email ? await dash.teams.getUserByEmail(email) : null
    // Unknown addresses cost a hash too, so timing does not tell which addresses have an account.
    const ok = user ? await verifyPassword(password, user.passwordHash) : (await verifyPassword(password, DUMMY_HASH), false)
    if (!user || !ok) {
      return dash.page(reply, { title: 'Sign in', flash: { kind: 'error', text: 'Wrong email or password.' } }, signinForm(request, email, next), 401)
    }
    await dash.teams.forgetLoginAttempt(attempt)
    await dash.teams.clearLoginFailures(`email:${email}`)
    return afterPassword(dash, request, reply, user, next)
  })

  app.get('/signup', async (request, reply) => {
    if (await dash.viewer(request)) return reply.redirect('/dashboard')
    return dash.page(reply, { title: 'Create your team' }, signupForm(request))
  })

  app.post('/signup', async (request, reply) => {
    const rawEmail = field(request.body, 'email')
    const email = normalEmail(rawEmail)
    const password = passwordField(request.body, 'password')
    const team = field(request.body, 'team').replace(/\s+/g, ' ')
    const fail = (text: string, status = 422) =>
      dash.page(reply, { title: 'Create your team', flash: { kind: 'error', text } }, signupForm(request, { email: rawEmail, team }), status)
    if (!email) return fail('Enter a valid email address.')
    if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
      return fail(`The password must have ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.`)
    }
    if (team === '' || team.length > 100) return fail('Enter a team name of at most 100 characters.')
    const t = dash.nowMs()
    // The hash is made either way, and the mail is sent after the answer either way, so neither the answer nor its
    // timing tells whether the address had an account.
    const passwordHash = await hashPassword(password)
    let user: UserRecord | null = null
    if (!(await dash.teams.getUserByEmail(email))) {
      // The team first, then the person with their membership in one transaction: whatever fails, no account is left
      // half made and the address can sign up again (at worst an empty team without members stays behind, as it does
      // when another sign-up takes the address between the check and the write).
      const org = await dash.svc.store.createOrg({ name: team, planId: DEFAULT_PLAN_ID }, t)
      user = await dash.teams.createAccount({ id: `usr_${randomUUID().replace(/-/g, '')}`, email, passwordHash }, { orgId: org.id, role: 'owner' }, t)
    }
    if (user) mailAfterAnswer(dash.log(), 'verification', email, sendVerification(dash, user))
    else mailAfterAnswer(dash.log(), 'sign-up notice', email, sendSignupAttempt(dash, email))
    return reply.redirect('/dashboard/signup/sent', 303)
  })

  app.get('/signup/sent', async (_request, reply) =>
    dash.page(
      reply,
      { title: 'Check your mail' },
      html`<div class="card narrow"><p>We sent a mail to the address you entered. Follow the link in it to verify the address.</p>
<p>Then sign in with your password. You can sign in now, too: until the address is verified your team can create test keys only.</p>
<p><a class="button" href="/dashboard/signin">Sign in</a></p></div>`,
    ),
  )

  app.post('/signout', async (request, reply) => {
    const raw = request.cookies.rc_session
    if (raw) await dash.teams.deleteSession(sha256(raw))
    void reply.clearCookie('rc_session', { path: '/dashboard' })
    return reply.redirect('/dashboard/signin', 303)
  })

  // every session of the person, this one included (a lost laptop, a shared computer)
  app.post('/signout/everywhere', async (request, reply) => {
    const v = await dash.viewer(request)
    if (!v) throw new DashboardError(401, 'Sign in first.')
    await dash.teams.deleteSessionsOf(v.user.id)
    void reply.clearCookie('rc_session', { path: '/dashboard' })
    return reply.redirect('/dashboard/signin?done=everywhere', 303)
  })
}

/** The verification link, and asking for a new one (within the mail limits; the page says when the next can go). */
function registerVerifyPages(app: FastifyInstance, dash: Dash): void {
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
}

/** A well-formed hash of a random password, checked when the address is unknown. */
const DUMMY_HASH = 'scrypt$32768$8$1$c2FsdHNhbHRzYWx0c2FsdA$' + 'A'.repeat(43)
