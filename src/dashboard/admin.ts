/**
 * `riskcheck admin user …`: the operator's view of dashboard accounts (README "Team dashboard"), for servers whose
 * mail relay is not set up yet or a person who lost the verification mail.
 *
 *   admin user list [--org ORG_ID]      people with their teams and roles (never password hashes)
 *   admin user verify EMAIL             mark an address as verified (its teams may then create live keys)
 */
import type { SqliteStore } from '../server/store/sqlite.js'
import type { Store } from '../server/store/types.js'
import { createSqliteTeamStore } from './store/sqlite.js'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** Runs `admin user ACTION`. Throws a RangeError for an unknown person or team, a TypeError for bad usage. */
export async function runDashboardUser(
  store: Store,
  action: string,
  positionals: string[],
  values: Record<string, unknown>,
  nowMs: number,
): Promise<{ json: unknown; text: string }> {
  const db = (store as Partial<SqliteStore>).db
  if (!db) throw new RangeError('dashboard accounts live in the SQLite database; this store has none')
  const teams = createSqliteTeamStore(db)
  switch (action) {
    case 'list': {
      const org = values.org as string | undefined
      if (org !== undefined && !(await store.getOrg(org, nowMs))) throw new RangeError(`no org ${org}`)
      const rows = (db.prepare('SELECT id FROM dashboard_users ORDER BY created_at, rowid').all() as Array<{ id: string }>).map((r) => r.id)
      const out = []
      for (const id of rows) {
        const user = (await teams.getUser(id))!
        const memberships = (await teams.listMemberships(id)).filter((m) => org === undefined || m.orgId === org)
        if (org !== undefined && memberships.length === 0) continue
        out.push({
          id: user.id,
          email: user.email,
          verified_at: iso(user.emailVerifiedAt),
          created_at: iso(user.createdAt),
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
    default:
      throw new TypeError(`unknown action "user ${action}" (list, verify)`)
  }
}
