/**
 * Set-up people for the dashboard suites that test something other than signing up or in: an account owning a new
 * team, and a session, written to the store as the sign-up and sign-in forms leave them. The browser harness
 * (harness.ts) and the HTTP suites (engines.ts) both make theirs here.
 */
import { randomUUID } from 'node:crypto'
import { DEFAULT_PLAN_ID } from '../../src/accounts/plans.js'
import { randomToken, sha256 } from '../../src/dashboard/context.js'
import { hashPassword } from '../../src/dashboard/password.js'
import type { RiskcheckServer } from '../../src/server/app.js'

/** The dashboard's default session time (`sessionTtlMs`). */
const SESSION_MS = 7 * 24 * 3600_000

/** scrypt hashes of set-up passwords, one per password per process (the product's cost is unchanged). */
const setupHashes = new Map<string, Promise<string>>()

/** A person who owns a new team `team`, verified or not; their password signs in through the form as usual. */
export async function storeAccount(app: RiskcheckServer, email: string, team: string, options: { password: string; verified: boolean }, nowMs: number): Promise<{ userId: string; orgId: string }> {
  if (!setupHashes.has(options.password)) setupHashes.set(options.password, hashPassword(options.password))
  const passwordHash = await setupHashes.get(options.password)!
  const org = await app.store.createOrg({ name: team, planId: DEFAULT_PLAN_ID }, nowMs)
  const teams = app.dashboard!.teams
  const user = (await teams.createAccount({ id: `usr_${randomUUID().replace(/-/g, '')}`, email, passwordHash }, { orgId: org.id, role: 'owner' }, nowMs))!
  if (options.verified) await teams.setEmailVerified(user.id, nowMs)
  return { userId: user.id, orgId: org.id }
}

/** A session of `userId` written to the store; the value of its cookie (`rc_session`, path /dashboard). */
export async function storeSession(app: RiskcheckServer, userId: string, nowMs: number): Promise<string> {
  const id = randomToken()
  await app.dashboard!.teams.createSession({ idHash: sha256(id), userId, csrf: randomToken(), createdAt: nowMs, expiresAt: nowMs + SESSION_MS })
  return id
}
