/**
 * The account page: two-factor sign-in (set up with an authenticator app — secret, otpauth:// URI and QR code —
 * confirmed by a first code, which also shows ten single-use recovery codes once; turned off with the password and a
 * code) and "sign out everywhere". {@link registerAccountPages} also registers the other account pages: password
 * reset, the second sign-in step, and the owners' switch that requires two-factor sign-in of a team.
 */
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { DashboardError, doneFlash, sha256, type Dash, type Viewer } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, html, Html, when, type LayoutContext } from '../html.js'
import { PASSWORD_MAX, verifyPassword } from '../password.js'
import { matchTotp, newRecoveryCodes, newTotpSecret, normalRecoveryCode, totpQrSvg, totpUri } from '../totp.js'
import type { OrgRecord } from '../../accounts/types.js'
import type { TeamStore, UserRecord } from '../../server/store/contracts/team-store.js'
import { registerTeamTwoFactor } from './members.js'
import { registerResetPages } from './reset.js'
import { checkSecondFactor, CodeField, registerSecondFactorPages } from './second-factor.js'

type Flash = LayoutContext['flash']

/** The enrolment's confirmation: the first code of the authenticator app. */
const ConfirmForm = Type.Object({ code: Type.Optional(CodeField) })
/** Turning two-factor sign-in off: the password as typed and a code (or a recovery code). */
const DisableForm = Type.Object({ password: Type.Optional(Type.String({ maxLength: PASSWORD_MAX })), code: Type.Optional(CodeField) })

/** Refuses a team's pages (a GET is sent to the account page) to a member without two-factor sign-in when the team requires it. */
export async function requireTwoFactor(teams: TeamStore, user: UserRecord, org: OrgRecord): Promise<void> {
  if (user.totpEnabledAt === null && (await teams.teamRequiresTwoFactor(org.id))) {
    throw new DashboardError(403, `${org.name} requires two-factor sign-in: set it up on your account page first.`, '/dashboard/account?required=1')
  }
}

export function registerAccountPages(app: FastifyInstance, dash: Dash): void {
  registerResetPages(app, dash)
  registerSecondFactorPages(app, dash)
  registerTeamTwoFactor(app, dash)

  const signedIn = async (request: FastifyRequest): Promise<Viewer> => {
    const v = await dash.viewer(request)
    if (!v) throw new DashboardError(401, 'Sign in first.')
    return v
  }
  const ctx = (v: Viewer, flash?: Flash): LayoutContext => ({
    title: 'Your account',
    user: { email: v.user.email, verified: v.user.emailVerifiedAt !== null },
    csrf: v.session.csrf,
    flash,
  })

  const twoFactorCard = async (v: Viewer, recoveryCodes?: string[]) => {
    const csrf = csrfField(v.session.csrf)
    const { user } = v
    if (recoveryCodes) {
      return html`<section class="card" aria-labelledby="tf"><h2 id="tf">Two-factor sign-in is on</h2>
<p>Keep these recovery codes somewhere safe: each signs you in once when you do not have your authenticator app. They are shown only now.</p>
<div class="secret"><code id="recovery-codes" data-testid="recovery-codes">${recoveryCodes.map((c) => html`${c}<br>`)}</code><button type="button" class="secondary" data-copy="recovery-codes" hidden>Copy</button></div>
<p><a href="/dashboard/account">Done</a></p></section>`
    }
    if (user.totpEnabledAt !== null) {
      const left = await dash.teams.countRecoveryCodes(user.id)
      return html`<section class="card" aria-labelledby="tf"><h2 id="tf">Two-factor sign-in</h2>
<p>On since ${when(user.totpEnabledAt)}: signing in asks for a code of your authenticator app. Recovery codes left: <b data-testid="recovery-left">${left}</b>.</p>
<form method="post" action="/dashboard/account/two-factor/disable" class="stack">${csrf}
<label><span>Password</span><input type="password" name="password" autocomplete="current-password" required></label>
<label><span>Code</span><input type="text" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="40" required></label>
<button type="submit" class="danger">Turn off two-factor sign-in</button></form></section>`
    }
    if (user.totpSecret !== null) {
      const uri = totpUri(user.totpSecret, user.email)
      return html`<section class="card" aria-labelledby="tf"><h2 id="tf">Set up two-factor sign-in</h2>
<p>Scan this code with an authenticator app (or enter the key by hand), then enter the 6-digit code it shows.</p>
<div class="qr">${new Html(totpQrSvg(uri))}</div>
<p class="wrap">Key: <code data-testid="totp-secret">${user.totpSecret}</code></p>
<p class="muted wrap">URI: <code data-testid="totp-uri">${uri}</code></p>
<form method="post" action="/dashboard/account/two-factor/confirm" class="stack">${csrf}
<label><span>Code</span><input type="text" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="10" required></label>
<button type="submit">Turn on two-factor sign-in</button></form></section>`
    }
    return html`<section class="card" aria-labelledby="tf"><h2 id="tf">Two-factor sign-in</h2>
<p>Off. With it on, signing in also asks for a code of an authenticator app on your phone.</p>
<form method="post" action="/dashboard/account/two-factor/start">${csrf}<button type="submit">Set up two-factor sign-in</button></form></section>`
  }

  const page = async (reply: FastifyReply, v: Viewer, flash?: Flash, status = 200, recoveryCodes?: string[]) =>
    dash.page(
      reply,
      ctx(v, flash),
      html`<p>Signed in as <b>${v.user.email}</b>${v.user.emailVerifiedAt === null ? ' (not verified yet)' : ''}. <a href="/dashboard">Back to the dashboard</a></p>
${await twoFactorCard(v, recoveryCodes)}
<section class="card" aria-labelledby="everywhere"><h2 id="everywhere">Sessions</h2>
<p>Signed in on another computer, or lost one? End every session of your account, this one included.</p>
<form method="post" action="/dashboard/signout/everywhere" data-confirm="Sign out on every device, this one included?">${csrfField(v.session.csrf)}<button type="submit" class="danger">Sign out everywhere</button></form></section>`,
      status,
    )
  const reload = async (v: Viewer): Promise<Viewer> => ({ ...v, user: (await dash.teams.getUser(v.user.id)) ?? v.user })

  app.get('/account', async (request: FastifyRequest<{ Querystring: { required?: string; done?: string } }>, reply) => {
    const v = await signedIn(request)
    const required = request.query.required === '1' && v.user.totpEnabledAt === null
    const flash: Flash = required ? { kind: 'error', text: 'A team of yours requires two-factor sign-in: set it up to open its pages.' } : doneFlash(request.query)
    return page(reply, v, flash)
  })

  app.post('/account/two-factor/start', async (request, reply) => {
    const v = await signedIn(request)
    if (v.user.totpEnabledAt !== null) return reply.redirect('/dashboard/account', 303)
    await dash.teams.setTotp(v.user.id, newTotpSecret(), null)
    return reply.redirect('/dashboard/account', 303)
  })

  app.post('/account/two-factor/confirm', async (request, reply) => {
    const v = await signedIn(request)
    const secret = v.user.totpSecret
    if (secret === null || v.user.totpEnabledAt !== null) return reply.redirect('/dashboard/account', 303)
    const step = matchTotp(secret, (readForm(request, ConfirmForm).code ?? '').trim(), dash.nowMs())
    if (step === null) return page(reply, v, { kind: 'error', text: 'That code is not right. Check the time of your phone and enter the code shown now.' }, 422)
    const t = dash.nowMs()
    await dash.teams.setTotp(v.user.id, secret, t)
    await dash.teams.useTotpStep(v.user.id, step)
    const codes = newRecoveryCodes()
    await dash.teams.setRecoveryCodes(v.user.id, codes.map((c) => sha256(normalRecoveryCode(c))))
    // sessions signed in without the second factor end, but this one
    await dash.teams.deleteSessionsOf(v.user.id, v.session.idHash)
    return page(reply, await reload(v), { kind: 'ok', text: 'Two-factor sign-in is on.' }, 200, codes)
  })

  app.post('/account/two-factor/disable', async (request, reply) => {
    const v = await signedIn(request)
    if (v.user.totpEnabledAt === null) return reply.redirect('/dashboard/account', 303)
    const form = readForm(request, DisableForm)
    // the password and the code are counted like a sign-in's, so a session left open cannot be used to guess them
    const attempt = await dash.takeAttempt([`mfa:${v.user.id}`, `ip:${request.ip}`])
    if (!attempt) {
      void reply.header('Retry-After', String(dash.retryAfter))
      return page(reply, v, { kind: 'error', text: 'Too many wrong tries. Wait 15 minutes and try again.' }, 429)
    }
    const ok = (await verifyPassword(form.password ?? '', v.user.passwordHash)) && (await checkSecondFactor(dash, v.user, (form.code ?? '').trim()))
    if (!ok) return page(reply, v, { kind: 'error', text: 'The password or the code is not right.' }, 401)
    await dash.teams.forgetLoginAttempt(attempt)
    await dash.teams.setTotp(v.user.id, null, null)
    await dash.teams.setRecoveryCodes(v.user.id, [])
    return reply.redirect('/dashboard/account?done=two-factor-off', 303)
  })
}
