/**
 * The contract of the dashboard's {@link TeamStore} (src/server/store/contracts/team-store.ts), run by ./contracts.test.ts on
 * every engine of ./engines.ts.
 */
import { expect, it } from 'vitest'
import type { TeamStore } from '../../src/server/store/contracts/team-store.js'
type WithStore = (fn: (s: TeamStore) => Promise<void>) => () => Promise<void>

export function teamStoreContract(make: () => Promise<{ store: TeamStore; done(): Promise<void> | void }>): void {
  const withStore: WithStore = (fn) => async () => {
    const { store, done } = await make()
    try {
      await fn(store)
    } finally {
      await done()
    }
  }
  accountSecurityContract(withStore)

  it(
    'users: unique lower-cased email, verification once',
    withStore(async (s) => {
      const u = await s.createUser({ id: 'usr_1', email: 'a@x.test', passwordHash: 'h' }, 10)
      expect(u).toEqual({ id: 'usr_1', email: 'a@x.test', passwordHash: 'h', emailVerifiedAt: null, createdAt: 10, totpSecret: null, totpEnabledAt: null })
      expect(await s.createUser({ id: 'usr_2', email: 'a@x.test', passwordHash: 'h2' }, 11)).toBeNull()
      expect((await s.getUserByEmail('a@x.test'))?.id).toBe('usr_1')
      expect(await s.getUser('usr_2')).toBeNull()
      await s.setEmailVerified('usr_1', 20)
      await s.setEmailVerified('usr_1', 30)
      expect((await s.getUser('usr_1'))?.emailVerifiedAt).toBe(20)
      await s.createUser({ id: 'usr_0', email: 'b@x.test', passwordHash: 'h0' }, 5)
      expect((await s.listUsers()).map((u) => [u.id, u.emailVerifiedAt])).toEqual([
        ['usr_0', null],
        ['usr_1', 20],
      ])
      await s.setPasswordHash('usr_1', 'h-new')
      expect((await s.getUserByEmail('a@x.test'))?.passwordHash).toBe('h-new')
      expect((await s.getUser('usr_0'))?.passwordHash).toBe('h0')
    }),
  )

  accountAndMailContract(withStore)

  it(
    'members: put, change role, list with email, memberships per user, remove',
    withStore(async (s) => {
      await s.createUser({ id: 'u1', email: 'one@x.test', passwordHash: 'h' }, 1)
      await s.createUser({ id: 'u2', email: 'two@x.test', passwordHash: 'h' }, 1)
      await s.putMember({ orgId: 'org_a', userId: 'u1', role: 'owner', createdAt: 1 })
      await s.putMember({ orgId: 'org_a', userId: 'u2', role: 'developer', createdAt: 2 })
      await s.putMember({ orgId: 'org_b', userId: 'u2', role: 'admin', createdAt: 3 })
      await s.putMember({ orgId: 'org_a', userId: 'u2', role: 'admin', createdAt: 9 })
      expect(await s.listMembers('org_a')).toEqual([
        { orgId: 'org_a', userId: 'u1', role: 'owner', createdAt: 1, email: 'one@x.test' },
        { orgId: 'org_a', userId: 'u2', role: 'admin', createdAt: 2, email: 'two@x.test' },
      ])
      expect((await s.listMemberships('u2')).map((m) => m.orgId)).toEqual(['org_a', 'org_b'])
      expect(await s.getMember('org_b', 'u1')).toBeNull()
      expect(await s.removeMember('org_a', 'u2')).toBe(true)
      expect(await s.removeMember('org_a', 'u2')).toBe(false)
      expect((await s.listMembers('org_a')).length).toBe(1)
    }),
  )

  it(
    'sessions expire and can be deleted',
    withStore(async (s) => {
      await s.createUser({ id: 'u1', email: 'one@x.test', passwordHash: 'h' }, 1)
      await s.createSession({ idHash: 'sh', userId: 'u1', csrf: 'c', createdAt: 1, expiresAt: 100 })
      expect((await s.getSession('sh', 99))?.csrf).toBe('c')
      expect(await s.getSession('sh', 100)).toBeNull()
      await s.deleteSession('sh')
      expect(await s.getSession('sh', 50)).toBeNull()
      await s.createUser({ id: 'u2', email: 'two@x.test', passwordHash: 'h' }, 1)
      for (const id of ['a', 'b', 'c']) await s.createSession({ idHash: id, userId: 'u1', csrf: 'c', createdAt: 1, expiresAt: 100 })
      await s.createSession({ idHash: 'other', userId: 'u2', csrf: 'c', createdAt: 1, expiresAt: 100 })
      expect(await s.deleteSessionsOf('u1', 'b')).toBe(2)
      expect(await s.getSession('b', 50)).not.toBeNull()
      expect(await s.deleteSessionsOf('u1')).toBe(1)
      expect(await s.getSession('b', 50)).toBeNull()
      expect(await s.getSession('other', 50)).not.toBeNull()
    }),
  )

  it(
    'tokens are taken once, by kind, not after expiry; invites listed per team',
    withStore(async (s) => {
      await s.createToken({ hash: 't1', kind: 'verify', userId: 'u1', orgId: null, email: 'a@x.test', role: null, createdAt: 1, expiresAt: 100 })
      expect(await s.consumeToken('t1', 'invite', 5)).toBeNull()
      expect((await s.getToken('t1', 'verify', 5))?.email).toBe('a@x.test')
      expect(await s.getToken('t1', 'verify', 100)).toBeNull()
      expect(await s.getToken('t1', 'invite', 5)).toBeNull()
      expect((await s.consumeToken('t1', 'verify', 5))?.email).toBe('a@x.test')
      expect(await s.consumeToken('t1', 'verify', 5)).toBeNull()
      await s.createToken({ hash: 't2', kind: 'verify', userId: 'u1', orgId: null, email: 'a@x.test', role: null, createdAt: 1, expiresAt: 100 })
      expect(await s.consumeToken('t2', 'verify', 100)).toBeNull()
      await s.createToken({ hash: 'i1', kind: 'invite', userId: 'u1', orgId: 'org_a', email: 'b@x.test', role: 'developer', createdAt: 2, expiresAt: 100 })
      await s.createToken({ hash: 'i2', kind: 'invite', userId: 'u1', orgId: 'org_b', email: 'c@x.test', role: 'admin', createdAt: 3, expiresAt: 100 })
      expect((await s.listInvites('org_a', 5)).map((t) => [t.email, t.role])).toEqual([['b@x.test', 'developer']])
      expect(await s.listInvites('org_a', 100)).toEqual([])
      expect(await s.deleteInvite('org_a', 'i2')).toBe(false)
      expect(await s.deleteInvite('org_b', 'i2')).toBe(true)
      // reset and pending two-factor tokens; a user's tokens of one kind deleted together
      await s.createToken({ hash: 'r1', kind: 'reset', userId: 'u1', orgId: null, email: 'a@x.test', role: null, createdAt: 1, expiresAt: 100 })
      await s.createToken({ hash: 'r2', kind: 'reset', userId: 'u1', orgId: null, email: 'a@x.test', role: null, createdAt: 2, expiresAt: 100 })
      await s.createToken({ hash: 'r3', kind: 'reset', userId: 'u2', orgId: null, email: 'b@x.test', role: null, createdAt: 2, expiresAt: 100 })
      await s.createToken({ hash: 'm1', kind: 'mfa', userId: 'u1', orgId: null, email: 'a@x.test', role: null, createdAt: 2, expiresAt: 100 })
      expect((await s.consumeToken('r1', 'reset', 5))?.userId).toBe('u1')
      await s.deleteTokensOf('u1', 'reset')
      expect(await s.getToken('r2', 'reset', 5)).toBeNull()
      expect(await s.getToken('r3', 'reset', 5)).not.toBeNull()
      expect(await s.getToken('m1', 'mfa', 5)).not.toBeNull()
    }),
  )

  it(
    'usage adds up per team, day and type; key creators; cursors',
    withStore(async (s) => {
      await s.addUsage('org_a', '2026-11-02', 'email', 1, 1)
      await s.addUsage('org_a', '2026-11-02', 'email', 2, 0)
      await s.addUsage('org_a', '2026-11-01', 'ip', 1, 1)
      await s.addUsage('org_b', '2026-11-01', 'ip', 5, 5)
      await s.addUsage('org_a', '2026-12-01', 'ip', 1, 1)
      expect(await s.listUsage('org_a', '2026-11-01', '2026-11-30')).toEqual([
        { day: '2026-11-01', type: 'ip', lookups: 1, credits: 1 },
        { day: '2026-11-02', type: 'email', lookups: 3, credits: 1 },
      ])
      await s.recordKeyCreator('org_a', 'key_1', 'u1')
      await s.recordKeyCreator('org_b', 'key_2', 'u2')
      expect([...(await s.keyCreators('org_a'))]).toEqual([['key_1', 'u1']])
      expect(await s.getCursor('mail')).toBe(0)
      await s.setCursor('mail', 7)
      await s.setCursor('mail', 9)
      expect(await s.getCursor('mail')).toBe(9)
    }),
  )

  it(
    'purges expired sessions and tokens and old sign-in failures, nothing else',
    withStore(async (s) => {
      await s.createUser({ id: 'u1', email: 'one@x.test', passwordHash: 'h' }, 1)
      await s.createSession({ idHash: 'old', userId: 'u1', csrf: 'c', createdAt: 1, expiresAt: 50 })
      await s.createSession({ idHash: 'new', userId: 'u1', csrf: 'c', createdAt: 1, expiresAt: 500 })
      await s.createToken({ hash: 'told', kind: 'verify', userId: 'u1', orgId: null, email: 'one@x.test', role: null, createdAt: 1, expiresAt: 60 })
      await s.createToken({ hash: 'tnew', kind: 'verify', userId: 'u1', orgId: null, email: 'one@x.test', role: null, createdAt: 1, expiresAt: 600 })
      await s.takeLoginAttempt('x1', [{ key: 'k', limit: 5 }], 10, 0)
      await s.takeLoginAttempt('x2', [{ key: 'k', limit: 5 }], 90, 0)
      expect(await s.purgeExpired(100, 50)).toBe(3)
      expect(await s.purgeExpired(100, 50)).toBe(0)
      expect(await s.getSession('new', 100)).not.toBeNull()
      expect(await s.getToken('tnew', 'verify', 100)).not.toBeNull()
      expect(await s.loginFailures('k', 0)).toBe(1)
    }),
  )
}

/** The account-security part of the contract: TOTP, recovery codes, team settings, sign-in attempts. */
function accountSecurityContract(withStore: WithStore): void {
  it(
    'TOTP: enrolment, a step used once and never an older one, recovery codes taken once',
    withStore(async (s) => {
      await s.createUser({ id: 'u1', email: 'one@x.test', passwordHash: 'h' }, 1)
      await s.createUser({ id: 'u2', email: 'two@x.test', passwordHash: 'h' }, 1)
      await s.setTotp('u1', 'SECRET', null)
      expect(await s.getUser('u1')).toMatchObject({ totpSecret: 'SECRET', totpEnabledAt: null })
      expect(await s.useTotpStep('u1', 100)).toBe(true)
      await s.setTotp('u1', 'SECRET', 50)
      expect(await s.getUser('u1')).toMatchObject({ totpSecret: 'SECRET', totpEnabledAt: 50 })
      // turning it on forgot the step used during enrolment
      expect(await s.useTotpStep('u1', 100)).toBe(true)
      expect(await s.useTotpStep('u1', 100)).toBe(false)
      expect(await s.useTotpStep('u1', 99)).toBe(false)
      expect(await s.useTotpStep('u1', 101)).toBe(true)
      expect(await s.useTotpStep('u2', 100)).toBe(true)
      await s.setRecoveryCodes('u1', ['c1', 'c2', 'c3'])
      await s.setRecoveryCodes('u2', ['c1'])
      expect(await s.useRecoveryCode('u1', 'c2')).toBe(true)
      expect(await s.useRecoveryCode('u1', 'c2')).toBe(false)
      expect(await s.useRecoveryCode('u1', 'nope')).toBe(false)
      expect(await s.countRecoveryCodes('u1')).toBe(2)
      await s.setRecoveryCodes('u1', ['d1'])
      expect(await s.useRecoveryCode('u1', 'c1')).toBe(false)
      expect(await s.countRecoveryCodes('u1')).toBe(1)
      expect(await s.countRecoveryCodes('u2')).toBe(1)
      await s.setTotp('u1', null, null)
      expect(await s.getUser('u1')).toMatchObject({ totpSecret: null, totpEnabledAt: null })
    }),
  )

  it(
    'team settings: two-factor off until an owner requires it',
    withStore(async (s) => {
      expect(await s.teamRequiresTwoFactor('org_a')).toBe(false)
      await s.setTeamRequiresTwoFactor('org_a', true)
      expect(await s.teamRequiresTwoFactor('org_a')).toBe(true)
      expect(await s.teamRequiresTwoFactor('org_b')).toBe(false)
      await s.setTeamRequiresTwoFactor('org_a', false)
      expect(await s.teamRequiresTwoFactor('org_a')).toBe(false)
    }),
  )

  it(
    'sign-in attempts: counted before the check, refused at the limit of any key, taken back on success, cleared',
    withStore(async (s) => {
      const keys = [
        { key: 'email:a', limit: 2 },
        { key: 'ip:1', limit: 3 },
      ]
      expect(await s.takeLoginAttempt('a1', keys, 10, 0)).toBe(true)
      expect(await s.takeLoginAttempt('a2', keys, 20, 0)).toBe(true)
      // the address is at its limit: refused, and nothing counted under the client either
      expect(await s.takeLoginAttempt('a3', keys, 21, 0)).toBe(false)
      expect(await s.loginFailures('ip:1', 0)).toBe(2)
      // a success takes its own attempt back, under every key
      await s.forgetLoginAttempt('a2')
      expect(await s.loginFailures('email:a', 0)).toBe(1)
      expect(await s.loginFailures('ip:1', 0)).toBe(1)
      // the window slides: from 15 on, the attempt at 10 no longer counts
      expect(await s.takeLoginAttempt('a4', keys, 30, 15)).toBe(true)
      expect(await s.takeLoginAttempt('a5', keys, 31, 15)).toBe(true)
      // the client's limit applies whatever the address
      expect(await s.takeLoginAttempt('a6', [{ key: 'email:b', limit: 2 }, { key: 'ip:1', limit: 3 }], 32, 15)).toBe(true)
      expect(await s.takeLoginAttempt('a7', [{ key: 'email:c', limit: 2 }, { key: 'ip:1', limit: 3 }], 33, 15)).toBe(false)
      expect(await s.loginFailures('email:c', 0)).toBe(0)
      expect(await s.loginFailures('email:a', 25)).toBe(2)
      expect(await s.loginFailures('other', 0)).toBe(0)
      await s.clearLoginFailures('email:a')
      expect(await s.loginFailures('email:a', 0)).toBe(0)
      expect(await s.takeLoginAttempt('a8', [{ key: 'email:a', limit: 1 }], 40, 15)).toBe(true)
      expect(await s.takeLoginAttempt('a9', [{ key: 'email:a', limit: 1 }], 40, 15)).toBe(false)
    }),
  )

  it(
    'sign-in attempts taken at the same time never pass the limit',
    withStore(async (s) => {
      const keys = [
        { key: 'email:burst', limit: 5 },
        { key: 'ip:burst', limit: 50 },
      ]
      const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => s.takeLoginAttempt(`b${i}`, keys, 100 + i, 0)))
      expect(taken.filter(Boolean)).toHaveLength(5)
      expect(await s.loginFailures('ip:burst', 0)).toBe(5)
    }),
  )
}

/** The contract of sign-up accounts and the mail throttle (part of {@link teamStoreContract}). */
function accountAndMailContract(withStore: WithStore): void {
  it(
    'accounts: a user and their first membership together; nothing when the address is taken',
    withStore(async (s) => {
      const u = await s.createAccount({ id: 'usr_1', email: 'a@x.test', passwordHash: 'h' }, { orgId: 'org_a', role: 'owner' }, 10)
      expect(u).toEqual({ id: 'usr_1', email: 'a@x.test', passwordHash: 'h', emailVerifiedAt: null, createdAt: 10, totpSecret: null, totpEnabledAt: null })
      expect(await s.listMembers('org_a')).toEqual([{ orgId: 'org_a', userId: 'usr_1', role: 'owner', createdAt: 10, email: 'a@x.test' }])
      expect(await s.createAccount({ id: 'usr_2', email: 'a@x.test', passwordHash: 'h2' }, { orgId: 'org_b', role: 'owner' }, 11)).toBeNull()
      expect(await s.getUser('usr_2')).toBeNull()
      expect(await s.listMembers('org_b')).toEqual([])
    }),
  )

  it(
    'mail throttle: counts per key within the window, refuses with the time the fullest quota has room, counts nothing then',
    withStore(async (s) => {
      const minute = { key: 'verify:account:u1', limit: 1, windowMs: 60_000 }
      const hour = { key: 'verify:account:u1', limit: 3, windowMs: 3_600_000 }
      const team = { key: 'invite:team:t1', limit: 2, windowMs: 3_600_000 }
      expect(await s.reserveMail([minute, hour], 1_000)).toEqual({ ok: true, nextAt: 61_000 })
      expect(await s.reserveMail([minute, hour], 30_000)).toEqual({ ok: false, retryAt: 61_000 })
      // a mail exactly a window old no longer counts
      expect(await s.reserveMail([minute, hour], 61_000)).toEqual({ ok: true, nextAt: 121_000 })
      expect(await s.reserveMail([minute, hour], 200_000)).toEqual({ ok: true, nextAt: 3_601_000 })
      // the hour is full: room again when its oldest mail (at 1,000) leaves it
      expect(await s.reserveMail([minute, hour], 300_000)).toEqual({ ok: false, retryAt: 3_601_000 })
      // a refusal by one quota counts under none of the others
      expect(await s.reserveMail([team], 10)).toEqual({ ok: true, nextAt: 10 })
      expect(await s.reserveMail([team, hour], 300_000)).toEqual({ ok: false, retryAt: 3_601_000 })
      expect(await s.reserveMail([team], 300_001)).toEqual({ ok: true, nextAt: 3_600_010 })
      expect(await s.reserveMail([team], 300_002)).toEqual({ ok: false, retryAt: 3_600_010 })
      // other keys are not touched; old mails are purged with old sign-in failures
      expect(await s.reserveMail([{ key: 'verify:account:u2', limit: 1, windowMs: 60_000 }], 300_000)).toEqual({ ok: true, nextAt: 360_000 })
      expect(await s.purgeExpired(400_000, 250_000)).toBe(4)
      expect(await s.reserveMail([{ ...team, limit: 1 }], 400_000)).toEqual({ ok: false, retryAt: 3_900_001 })
    }),
  )
}
