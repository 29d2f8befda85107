/**
 * Password reset by mail: the form asks for an address and answers the same whether or not it has an account; an
 * account (verified or not) gets a one-time link valid for an hour, through the outbox (kind `reset`, within its mail
 * limits; a link held back is not announced, since the answer must not differ). Setting a new password through it
 * ends every session of the account, clears its failed sign-ins, counts the address as verified (the link reached
 * it) and continues as a sign-in would (with the second factor when two-factor sign-in is on).
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Text } from '../../server/text.js'
import { DashboardError, PRE_COOKIE, randomToken, sha256, type Dash } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, html } from '../html.js'
import { mailAfterAnswer, type MailOutcome } from '../outbox.js'
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN } from '../password.js'
import type { UserRecord } from '../../server/store/contracts/team-store.js'
import { normalEmail } from './auth.js'
import { afterPassword } from './second-factor.js'

/** Reset links stay valid for an hour. */
export const RESET_TTL_MS = 3600_000

/** The ask-for-a-link form: an address (checked further by normalEmail). */
const ResetForm = Type.Object({ email: Type.Optional(Text({ maxLength: 254 })) })
/**
 * The new-password form: the link's token and the password as typed (no text rule beyond "no NUL", like every
 * password field; one too short is shown the form again by the handler).
 */
const NewPasswordForm = Type.Object({ token: Type.Optional(Text({ maxLength: 100 })), password: Type.Optional(Type.String({ maxLength: PASSWORD_MAX })) })

/** Mails a reset link for `user` (a new one each time; every link of the account works until one is used). */
function sendReset(dash: Dash, user: UserRecord): Promise<MailOutcome> {
  return dash.outbox.send({ kind: 'reset', to: user.email, account: user.id }, async () => {
    const token = randomToken()
    const t = dash.nowMs()
    await dash.teams.createToken({ hash: sha256(token), kind: 'reset', userId: user.id, orgId: null, email: user.email, role: null, createdAt: t, expiresAt: t + RESET_TTL_MS })
    return {
      subject: 'Reset your riskcheck password',
      text:
        `Hello,\n\nsomeone (maybe you) asked to reset the password of ${user.email} on riskcheck. Set a new one here (the link works once, for an hour):\n\n` +
        `${dash.outbox.link(`/dashboard/reset/new?token=${token}`)}\n\n` +
        'Setting a new password signs the account out everywhere.\n\nIf you did not ask for this, ignore this mail: your password stays as it is.\n',
    }
  })
}

export function registerResetPages(app: FastifyInstance, dash: Dash): void {
  const title = 'Reset your password'
  const askForm = (request: FastifyRequest) => html`<div class="card narrow">
<form method="post" action="/dashboard/reset" class="stack">
${csrfField(request.cookies[PRE_COOKIE])}
<label><span>Email</span><input type="email" name="email" autocomplete="username" maxlength="254" required></label>
<button type="submit">Send a reset link</button>
</form>
<p class="muted"><a href="/dashboard/signin">Back to sign-in</a></p>
</div>`
  const newForm = (request: FastifyRequest, token: string) => html`<div class="card narrow">
<form method="post" action="/dashboard/reset/new" class="stack">
${csrfField(request.cookies[PRE_COOKIE])}
<input type="hidden" name="token" value="${token}">
<label><span>New password</span><input type="password" name="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" required>
<small class="muted">At least ${PASSWORD_MIN} characters. Every session of your account ends.</small></label>
<button type="submit">Set the new password</button>
</form>
</div>`
  const invalid = () => new DashboardError(400, 'This reset link is not valid (it was used already, or is older than an hour). Ask for a new one on the sign-in page.')
  const tokenOf = (s: string) => (s.length > 0 && s.length <= 100 ? sha256(s) : '')

  app.get('/reset', async (request: FastifyRequest<{ Querystring: { done?: string } }>, reply) => {
    if (request.query.done === 'sent') {
      return dash.page(
        reply,
        { title: 'Check your mail' },
        html`<div class="card narrow"><p>If an account has that address, we sent it a link to set a new password. The link works once, for an hour.</p>
<p class="muted">One link a minute is sent to an account: if you asked a moment ago, use the link of that mail.</p>
<p class="muted"><a href="/dashboard/signin">Back to sign-in</a></p></div>`,
      )
    }
    return dash.page(reply, { title }, askForm(request))
  })

  app.post('/reset', async (request, reply) => {
    const email = normalEmail(readForm(request, ResetForm).email ?? '')
    const user = email ? await dash.teams.getUserByEmail(email) : null
    // the same answer, at about the same time, whether or not the address has an account: the mail goes afterwards
    if (user) mailAfterAnswer(dash.log(), 'reset', user.email, sendReset(dash, user))
    return reply.redirect('/dashboard/reset?done=sent', 303)
  })

  app.get('/reset/new', async (request: FastifyRequest<{ Querystring: { token?: string } }>, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : ''
    if (!(await dash.teams.getToken(tokenOf(token), 'reset', dash.nowMs()))) throw invalid()
    return dash.page(reply, { title: 'Choose a new password' }, newForm(request, token))
  })

  app.post('/reset/new', async (request, reply) => {
    const form = readForm(request, NewPasswordForm)
    const token = (form.token ?? '').trim()
    const password = form.password ?? ''
    if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
      return dash.page(
        reply,
        { title: 'Choose a new password', flash: { kind: 'error', text: `The password must have ${PASSWORD_MIN} to ${PASSWORD_MAX} characters.` } },
        newForm(request, token),
        422,
      )
    }
    const hash = await hashPassword(password)
    // taken once: of two submissions of one link, one sets the password
    const record = await dash.teams.consumeToken(tokenOf(token), 'reset', dash.nowMs())
    const user = record ? await dash.teams.getUser(record.userId) : null
    if (!record || !user) throw invalid()
    await dash.teams.setPasswordHash(user.id, hash)
    await dash.teams.deleteTokensOf(user.id, 'reset')
    await dash.teams.deleteSessionsOf(user.id)
    await dash.teams.clearLoginFailures(`email:${user.email}`)
    await dash.teams.setEmailVerified(user.id, dash.nowMs())
    return afterPassword(dash, request, reply, user, '/dashboard')
  })
}
