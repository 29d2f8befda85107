/**
 * The second step of signing in with two-factor sign-in on: after the right password the browser holds a pending
 * sign-in (a one-time token in an httpOnly cookie, 5 minutes) and is asked for a code from the authenticator app
 * or one of the recovery codes. Codes are counted per person before they are checked, like passwords.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Text } from '../../server/text.js'
import { DashboardError, MFA_COOKIE, PRE_COOKIE, randomToken, sha256, type Dash } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, html } from '../html.js'
import type { UserRecord } from '../../server/store/contracts/team-store.js'
import { matchTotp, normalRecoveryCode } from '../totp.js'

/** How long a pending sign-in waits for its code. */
const PENDING_TTL_MS = 5 * 60_000

/** A second-factor code field: 6 digits, or a recovery code (spaces and dashes allowed), at most 40 characters. */
export const CodeField = Text({ maxLength: 40 })
/** The second step's form: the code, and where to go after (checked by {@link nextPath}). */
const CodeForm = Type.Object({ code: Type.Optional(CodeField), next: Type.Optional(Text({ maxLength: 2048 })) })

/** A safe in-dashboard path to go to after sign-in (anything else → /dashboard). */
export function nextPath(s: string): string {
  return /^\/dashboard(\/[A-Za-z0-9_\-/.?=&%]*)?$/.test(s) && !s.includes('//') && !s.includes('..') ? s : '/dashboard'
}

/**
 * What follows a proven password (sign-in, or a password reset): signed in and sent to `next`, or — with two-factor
 * sign-in on — a pending sign-in and the code page.
 */
export async function afterPassword(dash: Dash, request: FastifyRequest, reply: FastifyReply, user: UserRecord, next: string): Promise<FastifyReply> {
  if (user.totpEnabledAt === null) {
    await dash.signIn(reply, request, user.id)
    return reply.redirect(nextPath(next), 303)
  }
  const token = randomToken()
  const t = dash.nowMs()
  await dash.teams.createToken({ hash: sha256(token), kind: 'mfa', userId: user.id, orgId: null, email: user.email, role: null, createdAt: t, expiresAt: t + PENDING_TTL_MS })
  void reply.setCookie(MFA_COOKIE, token, {
    path: '/dashboard',
    httpOnly: true,
    sameSite: 'strict',
    secure: request.protocol === 'https',
    maxAge: PENDING_TTL_MS / 1000,
  })
  return reply.redirect(`/dashboard/signin/code?next=${encodeURIComponent(nextPath(next))}`, 303)
}

/**
 * Whether `code` is a second factor of `user` now: a TOTP code of a step not used before (the step is then used),
 * or one of their recovery codes (then used up).
 */
export async function checkSecondFactor(dash: Dash, user: UserRecord, code: string): Promise<boolean> {
  if (!user.totpSecret) return false
  const step = matchTotp(user.totpSecret, code, dash.nowMs())
  if (step !== null) return dash.teams.useTotpStep(user.id, step)
  const recovery = normalRecoveryCode(code)
  return recovery.length === 16 && dash.teams.useRecoveryCode(user.id, sha256(recovery))
}

export function registerSecondFactorPages(app: FastifyInstance, dash: Dash): void {
  const pending = async (request: FastifyRequest) => {
    const raw = request.cookies[MFA_COOKIE]
    return raw && raw.length <= 100 ? dash.teams.getToken(sha256(raw), 'mfa', dash.nowMs()) : null
  }
  const form = (request: FastifyRequest, next: string) => html`<div class="card narrow">
<form method="post" action="/dashboard/signin/code" class="stack">
${csrfField(request.cookies[PRE_COOKIE])}
<input type="hidden" name="next" value="${nextPath(next)}">
<label><span>Code</span><input type="text" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="40" required autofocus>
<small class="muted">The 6-digit code of your authenticator app, or one of your recovery codes.</small></label>
<button type="submit">Verify</button>
</form>
<p class="muted"><a href="/dashboard/signin">Start over</a></p>
</div>`
  const title = 'Two-factor sign-in'

  app.get('/signin/code', async (request: FastifyRequest<{ Querystring: { next?: string } }>, reply) => {
    if (!(await pending(request))) return reply.redirect('/dashboard/signin', 303)
    return dash.page(reply, { title }, form(request, request.query.next ?? '/dashboard'))
  })

  app.post('/signin/code', async (request, reply) => {
    const sent = readForm(request, CodeForm)
    const next = nextPath((sent.next ?? '').trim())
    const record = await pending(request)
    if (!record) throw new DashboardError(400, 'This sign-in has expired (5 minutes). Sign in again.')
    const attempt = await dash.takeAttempt([`mfa:${record.userId}`, `ip:${request.ip}`])
    if (!attempt) {
      void reply.header('Retry-After', String(dash.retryAfter))
      return dash.page(reply, { title, flash: { kind: 'error', text: 'Too many wrong codes. Wait 15 minutes and try again.' } }, form(request, next), 429)
    }
    const user = await dash.teams.getUser(record.userId)
    if (!user || !(await checkSecondFactor(dash, user, (sent.code ?? '').trim()))) {
      return dash.page(reply, { title, flash: { kind: 'error', text: 'That code is not right (or was used already).' } }, form(request, next), 401)
    }
    await dash.teams.forgetLoginAttempt(attempt)
    await dash.teams.clearLoginFailures(`mfa:${user.id}`)
    // the pending sign-in is taken once: two tabs with the same code sign in once
    if (!(await dash.teams.consumeToken(record.hash, 'mfa', dash.nowMs()))) throw new DashboardError(400, 'This sign-in was completed already. Sign in again.')
    await dash.signIn(reply, request, user.id)
    return reply.redirect(next, 303)
  })
}
