/**
 * `riskcheck admin user …`: the operator's view of dashboard accounts (docs/dashboard.md), for servers whose
 * mail relay is not set up yet or a person who lost the verification mail.
 *
 *   admin user list [--org ORG_ID]      people with their teams and roles (never password hashes)
 *   admin user verify EMAIL             mark an address as verified (its teams may then create live keys)
 *   admin user two-factor-off EMAIL     turn off two-factor sign-in of a person who lost their authenticator and
 *                                       recovery codes (their sessions end; they set it up again after signing in)
 */
import type { Store } from '../server/store/contracts/store.js'
import type { TeamStore } from '../server/store/contracts/team-store.js'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/**
 * Runs `admin user ACTION` over the service's store and the dashboard's (SQLite or PostgreSQL, whichever the service
 * runs on). Throws a RangeError for an unknown person or team, a TypeError for bad usage.
 */
export async function runDashboardUser(
  store: Store,
  teams: TeamStore,
  action: string,
  positionals: string[],
  values: Record<string, unknown>,
  nowMs: number,
): Promise<{ json: unknown; text: string }> {
  switch (action) {
    case 'list': {
      const org = values.org as string | undefined
      if (org !== undefined && !(await store.getOrg(org, nowMs))) throw new RangeError(`no org ${org}`)
      const out = []
      for (const user of await teams.listUsers()) {
        const memberships = (await teams.listMemberships(user.id)).filter((m) => org === undefined || m.orgId === org)
        if (org !== undefined && memberships.length === 0) continue
        out.push({
          id: user.id,
          email: user.email,
          verified_at: iso(user.emailVerifiedAt),
          created_at: iso(user.createdAt),
          two_factor: user.totpEnabledAt !== null,
          teams: memberships.map((m) => ({ org_id: m.orgId, role: m.role })),
        })
      }
      return {
        json: out,
        text:
          out.map((u) => `${u.email}  ${u.verified_at ? 'verified' : 'unverified'}  ${u.teams.map((t) => `${t.org_id} (${t.role})`).join(', ') || '(no team)'}`).join('\n') ||
          '(no users)',
      }
    }
    case 'verify': {
      if (positionals.length !== 1) throw new TypeError('expected one EMAIL')
      const email = positionals[0]!.trim().toLowerCase()
      const user = await teams.getUserByEmail(email)
      if (!user) throw new RangeError(`no dashboard user ${email}`)
      await teams.setEmailVerified(user.id, nowMs)
      const after = (await teams.getUser(user.id))!
      return { json: { id: after.id, email: after.email, verified_at: iso(after.emailVerifiedAt) }, text: `${after.email} verified at ${iso(after.emailVerifiedAt)}` }
    }
    case 'two-factor-off': {
      if (positionals.length !== 1) throw new TypeError('expected one EMAIL')
      const email = positionals[0]!.trim().toLowerCase()
      const user = await teams.getUserByEmail(email)
      if (!user) throw new RangeError(`no dashboard user ${email}`)
      await teams.setTotp(user.id, null, null)
      await teams.setRecoveryCodes(user.id, [])
      const ended = await teams.deleteSessionsOf(user.id)
      return { json: { id: user.id, email: user.email, two_factor: false, sessions_ended: ended }, text: `${user.email}: two-factor sign-in off, ${ended} session(s) ended` }
    }
    default:
      throw new TypeError(`unknown action "user ${action}" (list, verify, two-factor-off)`)
  }
}
