/**
 * `riskcheck admin user list | verify | two-factor-off`: the operator's view of dashboard accounts in the server's database.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runAdmin } from '../../src/cli/admin-command.js'
import { createSqliteTeamStore } from '../../src/server/store/sqlite/dashboard.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { memoryIO } from '../helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-admin-user-'))
const db = join(dir, 'db.sqlite')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function admin(...args: string[]) {
  const io = memoryIO()
  const code = await runAdmin([...args, '--db', db, '--json'], io)
  return { code, json: code === 0 ? JSON.parse(io.out()) : undefined, err: io.err() }
}

describe('riskcheck admin user', () => {
  it('lists accounts with teams and roles, and verifies an address', async () => {
    const store = createSqliteStore(db)
    const org = await store.createOrg({ name: 'Ops', planId: 'free' }, 1000)
    const teams = createSqliteTeamStore(store.db)
    await teams.createUser({ id: 'usr_a', email: 'ann@example.test', passwordHash: 'secret-hash' }, 1000)
    await teams.createUser({ id: 'usr_b', email: 'bo@example.test', passwordHash: 'secret-hash' }, 2000)
    await teams.putMember({ orgId: org.id, userId: 'usr_a', role: 'owner', createdAt: 1000 })
    await teams.setTotp('usr_b', 'SECRET', 3000)
    await teams.setRecoveryCodes('usr_b', ['c1', 'c2'])
    await teams.createSession({ idHash: 's1', userId: 'usr_b', csrf: 'c', createdAt: 3000, expiresAt: Date.now() + 60_000 })
    await store.close()

    const all = await admin('user', 'list')
    expect(all.code).toBe(0)
    expect(all.json).toEqual([
      { id: 'usr_a', email: 'ann@example.test', verified_at: null, created_at: new Date(1000).toISOString(), two_factor: false, teams: [{ org_id: org.id, role: 'owner' }] },
      { id: 'usr_b', email: 'bo@example.test', verified_at: null, created_at: new Date(2000).toISOString(), two_factor: true, teams: [] },
    ])
    expect(JSON.stringify(all.json)).not.toContain('secret-hash')
    expect((await admin('user', 'list', '--org', org.id)).json.map((u: { email: string }) => u.email)).toEqual(['ann@example.test'])
    expect((await admin('user', 'list', '--org', 'org_nope')).code).toBe(1)

    const verified = await admin('user', 'verify', 'Ann@Example.test')
    expect(verified.code).toBe(0)
    expect(verified.json).toMatchObject({ id: 'usr_a', email: 'ann@example.test' })
    expect(verified.json.verified_at).toMatch(/^\d{4}-/)
    expect((await admin('user', 'verify', 'nobody@example.test')).code).toBe(1)
    expect((await admin('user', 'verify')).code).toBe(64)
    expect((await admin('user', 'frobnicate')).code).toBe(64)

    // a person who lost the authenticator and the recovery codes
    const off = await admin('user', 'two-factor-off', 'bo@example.test')
    expect(off.json).toEqual({ id: 'usr_b', email: 'bo@example.test', two_factor: false, sessions_ended: 1 })
    expect((await admin('user', 'list')).json.map((u: { two_factor: boolean }) => u.two_factor)).toEqual([false, false])
    const after = createSqliteStore(db)
    const teamsAfter = createSqliteTeamStore(after.db)
    expect(await teamsAfter.getUser('usr_b')).toMatchObject({ totpSecret: null, totpEnabledAt: null })
    expect(await teamsAfter.countRecoveryCodes('usr_b')).toBe(0)
    await after.close()
    expect((await admin('user', 'two-factor-off', 'nobody@example.test')).code).toBe(1)
  })
})
