/**
 * Members page and invitations: owners and admins invite by email with a role, change roles and remove members; only an
 * owner grants or takes the owner role, and a team keeps one owner. An invitation is a one-time link valid 7 days
 * (following it proves the address). Only a verified address invites, within the mail limits (docs/decisions.md, "Team
 * dashboard" → "mail throttle").
 */
import { randomUUID } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Text } from '../../server/text.js'
import { atLeast, DashboardError, doneFlash, field, notFound, passwordField, PRE_COOKIE, randomToken, sha256, type Dash, type TeamView } from '../context.js'
import { readForm } from '../forms.js'
import { csrfField, dataTable, html, when } from '../html.js'
import { nextMailText } from '../outbox.js'
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN } from '../password.js'
import type { TokenRecord } from '../../server/store/contracts/team-store.js'
import { ROLES } from '../roles.js'
import { normalEmail } from './auth.js'

const INVITE_TTL_MS = 7 * 24 * 3600_000
type Req = FastifyRequest<{ Params: { org: string; user?: string; hash?: string }; Querystring: { done?: string; token?: string } }>

const RoleField = Type.Union(ROLES.map((r) => Type.Literal(r)))
/** The invite form: an address (checked further by normalEmail) and a role. */
const InviteForm = Type.Object({ email: Type.Optional(Text({ maxLength: 254 })), role: RoleField })
/** The change-role form. */
const RoleForm = Type.Object({ role: RoleField })
/** The owners' two-factor switch: `1` requires it, `0` makes it optional. */
const TeamTwoFactorForm = Type.Object({ required: Type.Union([Type.Literal('0'), Type.Literal('1')]) })

/** The owners' switch that requires two-factor sign-in of every member (docs/dashboard.md). */
function twoFactorSection(v: TeamView, requires: boolean) {
  return html`<section class="card" aria-labelledby="team-2fa"><h2 id="team-2fa">Two-factor sign-in</h2>
<p>${requires ? 'Required: members without two-factor sign-in are sent to set it up before they can open this team.' : 'Optional for the members of this team.'}</p>
<form method="post" action="${v.base}/members/two-factor">${csrfField(v.session.csrf)}<input type="hidden" name="required" value="${requires ? '0' : '1'}">
<button type="submit" class="secondary">${requires ? 'Make it optional' : 'Require it for every member'}</button></form></section>`
}

/** Owners turn the team's two-factor requirement on (only with two-factor sign-in on themselves) or off. */
export function registerTeamTwoFactor(app: FastifyInstance, dash: Dash): void {
  app.post('/t/:org/members/two-factor', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'owner')
    const required = readForm(request, TeamTwoFactorForm).required === '1'
    if (required && v.user.totpEnabledAt === null) throw new DashboardError(409, 'Turn on two-factor sign-in for yourself first (on your account page).')
    await dash.teams.setTeamRequiresTwoFactor(v.org.id, required)
    return reply.redirect(`${v.base}/members?done=${required ? 'team-two-factor-on' : 'team-two-factor-off'}`, 303)
  })
}

/**
 * The members page of a team: the invite form (verified owners and admins), the two-factor switch (owners), the
 * members and the pending invitations.
 */
async function membersPage(dash: Dash, reply: FastifyReply, v: TeamView, flash?: { kind: 'ok' | 'error'; text: string }, status = 200): Promise<FastifyReply> {
  const members = await dash.teams.listMembers(v.org.id)
  const invites = await dash.teams.listInvites(v.org.id, dash.nowMs())
  const admin = atLeast(v.member.role, 'admin')
  const owner = v.member.role === 'owner'
  const grantable = ROLES.filter((r) => owner || r !== 'owner')
  const verified = v.user.emailVerifiedAt !== null
  const manage = (m: { userId: string; email: string; role: string }) => html`<form method="post" action="${v.base}/members/${m.userId}/role" class="inline">${csrfField(v.session.csrf)}
<label class="inline"><span class="hide-narrow muted">Role </span><select name="role" aria-label="Role of ${m.email}">${grantable.map((r) => html`<option value="${r}"${r === m.role ? html` selected` : ''}>${r}</option>`)}</select></label>
<button type="submit" class="secondary">Change</button></form>
<form method="post" action="${v.base}/members/${m.userId}/remove" class="inline" data-confirm="Remove ${m.email} from the team?">${csrfField(v.session.csrf)}<button type="submit" class="danger" aria-label="Remove ${m.email}">Remove</button></form>`
  const body = html`
${admin && !verified ? html`<p class="muted">Verify your email address to invite teammates: follow the link we mailed you.</p>` : ''}
${
admin && verified
  ? html`<section class="card" aria-labelledby="invite"><h2 id="invite">Invite a teammate</h2>
<form method="post" action="${v.base}/members/invite" class="stack">${csrfField(v.session.csrf)}
<label><span>Email</span><input type="email" name="email" required maxlength="254"></label>
<label><span>Role</span><select name="role">${grantable.map((r) => html`<option value="${r}"${r === 'developer' ? html` selected` : ''}>${r}</option>`)}</select></label>
<button type="submit">Send invitation</button></form>
<p class="muted">Owners and admins manage members and keys; developers see and create keys and revoke only their own.</p></section>`
  : ''
}
${owner ? twoFactorSection(v, await dash.teams.teamRequiresTwoFactor(v.org.id)) : ''}
<h2>Members</h2>
${dataTable(
  ['Email', 'Role', 'Since', ...(admin ? ['Manage'] : [])],
  members.map((m) => ({
    attrs: { 'data-member': m.email },
    cells: [
      html`<span class="wrap">${m.email}</span>${m.userId === v.user.id ? html` <span class="muted">(you)</span>` : ''}`,
      html`<span class="status">${m.role}</span>`,
      when(m.createdAt),
      ...(admin ? [{ cls: 'actions', body: m.userId !== v.user.id && (owner || m.role !== 'owner') ? manage(m) : '' }] : []),
    ],
  })),
)}
${
admin && invites.length > 0
  ? html`<h2>Pending invitations</h2>${dataTable(
      ['Email', 'Role', 'Expires', 'Withdraw'],
      invites.map((i) => ({
        attrs: { 'data-invite': i.email },
        cells: [
          html`<span class="wrap">${i.email}</span>`,
          i.role,
          when(i.expiresAt),
          {
            cls: 'actions',
            body: html`<form method="post" action="${v.base}/members/invites/${i.hash}/delete" class="inline">${csrfField(v.session.csrf)}<button type="submit" class="danger" aria-label="Withdraw the invitation of ${i.email}">Withdraw</button></form>`,
          },
        ],
      })),
    )}`
  : ''
}`
  return dash.page(reply, dash.teamLayout(v, 'Members', 'members', flash), body, status)
}

export function registerMemberPages(app: FastifyInstance, dash: Dash): void {
  const page = (reply: FastifyReply, v: TeamView, flash?: { kind: 'ok' | 'error'; text: string }, status = 200) => membersPage(dash, reply, v, flash, status)

  app.get('/t/:org/members', async (request: Req, reply) => page(reply, await dash.team(request, request.params.org), doneFlash(request.query)))

  app.post('/t/:org/members/invite', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    if (v.user.emailVerifiedAt === null) throw new DashboardError(403, 'Verify your email address before you invite anyone: follow the link we mailed you.')
    const form = readForm(request, InviteForm)
    const email = normalEmail(form.email ?? '')
    const role = form.role
    if (!email) return page(reply, v, { kind: 'error', text: 'Enter a valid email address.' }, 422)
    if (role === 'owner' && v.member.role !== 'owner') throw new DashboardError(403, 'Only owners invite owners.')
    const existing = await dash.teams.getUserByEmail(email)
    if (existing && (await dash.teams.getMember(v.org.id, existing.id))) return page(reply, v, { kind: 'error', text: `${email} is a member already.` }, 409)
    const outcome = await dash.outbox.send({ kind: 'invite', to: email, account: v.user.id, team: v.org.id }, async () => {
      const token = randomToken()
      const t = dash.nowMs()
      await dash.teams.createToken({ hash: sha256(token), kind: 'invite', userId: v.user.id, orgId: v.org.id, email, role, createdAt: t, expiresAt: t + INVITE_TTL_MS })
      return {
        subject: `${v.user.email} invited you to ${v.org.name} on riskcheck`,
        text:
          `Hello,\n\n${v.user.email} invited you to the team ${v.org.name} as ${role === 'admin' ? 'an' : 'a'} ${role}.\n\n` +
          `Accept the invitation (valid for 7 days):\n\n${dash.outbox.link(`/dashboard/invite?token=${token}`)}\n`,
      }
    })
    if (!outcome.sent) {
      const now = dash.nowMs()
      void reply.header('Retry-After', String(Math.max(1, Math.ceil((outcome.retryAt - now) / 1000))))
      const text = `Too many invitations went out a short while ago (from you, from this team or to ${email}). The next one can be sent at ${nextMailText(outcome.retryAt, now)}.`
      return page(reply, v, { kind: 'error', text }, 429)
    }
    return reply.redirect(`${v.base}/members?done=invited`, 303)
  })

  app.post('/t/:org/members/:user/:action', async (request: FastifyRequest<{ Params: { org: string; user: string; action: string } }>, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    const target = await dash.teams.getMember(v.org.id, request.params.user)
    if (!target) throw notFound()
    if (target.userId === v.user.id) throw new DashboardError(403, 'You cannot change your own membership here.')
    if (target.role === 'owner' && v.member.role !== 'owner') throw new DashboardError(403, 'Only owners change owners.')
    if (request.params.action === 'role') {
      const { role } = readForm(request, RoleForm)
      if (role === 'owner' && v.member.role !== 'owner') throw new DashboardError(403, 'Only owners grant the owner role.')
      await dash.teams.putMember({ ...target, role })
      return reply.redirect(`${v.base}/members?done=role`, 303)
    }
    if (request.params.action === 'remove') {
      await dash.teams.removeMember(v.org.id, target.userId)
      return reply.redirect(`${v.base}/members?done=removed`, 303)
    }
    throw notFound()
  })

  app.post('/t/:org/members/invites/:hash/delete', async (request: Req, reply) => {
    const v = await dash.team(request, request.params.org, 'admin')
    if (!(await dash.teams.deleteInvite(v.org.id, request.params.hash ?? ''))) throw notFound()
    return reply.redirect(`${v.base}/members?done=uninvited`, 303)
  })

  registerInvitationPages(app, dash)
}

/**
 * Following an invitation link: shows the invitation; accepting is a POST (with the CSRF token) that takes the token,
 * signed in as the invited address or with a new account.
 */
function registerInvitationPages(app: FastifyInstance, dash: Dash): void {
  const invitation = async (token: string): Promise<TokenRecord> => {
    const t = token.length > 0 && token.length <= 100 ? await dash.teams.getToken(sha256(token), 'invite', dash.nowMs()) : null
    if (!t || !t.orgId || !t.role) throw new DashboardError(400, 'This invitation is not valid (it was used, withdrawn or is older than 7 days). Ask for a new one.')
    return t
  }

  app.get('/invite', async (request: Req, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : ''
    const inv = await invitation(token)
    const org = await dash.svc.store.getOrg(inv.orgId!, dash.nowMs())
    if (!org) throw notFound()
    const v = await dash.viewer(request)
    const who = v ? { user: { email: v.user.email, verified: v.user.emailVerifiedAt !== null }, csrf: v.session.csrf } : {}
    const csrf = v ? v.session.csrf : request.cookies[PRE_COOKIE]
    const account = await dash.teams.getUserByEmail(inv.email)
    const intro = html`<p>You are invited to the team <b>${org.name}</b> as <b>${inv.role}</b> (${inv.email}).</p>`
    let body
    if (v && v.user.email === inv.email) {
      body = html`<div class="card narrow">${intro}<form method="post" action="/dashboard/invite" class="stack">${csrfField(csrf)}<input type="hidden" name="token" value="${token}"><button type="submit">Join ${org.name}</button></form></div>`
    } else if (v) {
      body = html`<div class="card narrow">${intro}<p>You are signed in as ${v.user.email}. Sign out, then open the link again to accept it as ${inv.email}.</p></div>`
    } else if (account) {
      body = html`<div class="card narrow">${intro}<p><a class="button" href="/dashboard/signin?next=${encodeURIComponent(`/dashboard/invite?token=${token}`)}">Sign in to accept</a></p></div>`
    } else {
      body = html`<div class="card narrow">${intro}<form method="post" action="/dashboard/invite" class="stack">${csrfField(csrf)}<input type="hidden" name="token" value="${token}">
<label><span>Choose a password</span><input type="password" name="password" autocomplete="new-password" minlength="${PASSWORD_MIN}" maxlength="${PASSWORD_MAX}" required></label>
<button type="submit">Create account and join</button></form></div>`
    }
    return dash.page(reply, { title: 'Invitation', ...who }, body)
  })

  app.post('/invite', async (request, reply) => {
    const token = field(request.body, 'token')
    const inv = await invitation(token)
    const t = dash.nowMs()
    const v = await dash.viewer(request)
    let userId: string
    if (v) {
      if (v.user.email !== inv.email) throw new DashboardError(403, `This invitation is for ${inv.email}.`)
      userId = v.user.id
    } else {
      if (await dash.teams.getUserByEmail(inv.email)) throw new DashboardError(403, 'Sign in first to accept this invitation.')
      const password = passwordField(request.body, 'password')
      if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
        throw new DashboardError(422, `The password must have ${PASSWORD_MIN} to ${PASSWORD_MAX} characters. Go back and try again.`)
      }
      const user = await dash.teams.createUser({ id: `usr_${randomUUID().replace(/-/g, '')}`, email: inv.email, passwordHash: await hashPassword(password) }, t)
      if (!user) throw new DashboardError(409, 'An account with this address exists; sign in to accept.')
      userId = user.id
    }
    // the token is taken once: two tabs accepting at the same time join once
    if (!(await dash.teams.consumeToken(inv.hash, 'invite', t))) throw new DashboardError(400, 'This invitation was used already.')
    // the link reached the address, so it is verified
    await dash.teams.setEmailVerified(userId, t)
    await dash.teams.putMember({ orgId: inv.orgId!, userId, role: inv.role!, createdAt: t })
    if (!v) await dash.signIn(reply, request, userId)
    return reply.redirect(`/dashboard/t/${encodeURIComponent(inv.orgId!)}/keys?done=joined`, 303)
  })
}
