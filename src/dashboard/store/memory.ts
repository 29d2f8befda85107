/** The dashboard's store in memory (tests, and servers whose service store is not SQLite). See ./types.ts. */
import type { MembershipRecord, SessionRecord, TeamStore, TokenRecord, UsageDay, UserRecord } from './types.js'

export function createMemoryTeamStore(): TeamStore {
  const users = new Map<string, UserRecord>()
  const members: MembershipRecord[] = []
  const sessions = new Map<string, SessionRecord>()
  const tokens = new Map<string, TokenRecord>()
  /** Sign-in attempts per key: when, and of which attempt. */
  const failures = new Map<string, Array<{ at: number; attempt: string }>>()
  const totpSteps = new Map<string, number>()
  const recovery = new Map<string, Set<string>>()
  const twoFactorTeams = new Set<string>()
  const usage = new Map<string, UsageDay>()
  const cursors = new Map<string, number>()
  const creators = new Map<string, Map<string, string>>()
  const copy = <T>(v: T | undefined): T | null => (v === undefined ? null : { ...v })

  return {
    createUser(input, nowMs) {
      if ([...users.values()].some((u) => u.email === input.email)) return null
      const u: UserRecord = { ...input, emailVerifiedAt: null, createdAt: nowMs, totpSecret: null, totpEnabledAt: null }
      users.set(u.id, u)
      return { ...u }
    },
    getUser: (id) => copy(users.get(id)),
    getUserByEmail: (email) => copy([...users.values()].find((u) => u.email === email)),
    listUsers: () => [...users.values()].sort((a, b) => a.createdAt - b.createdAt).map((u) => ({ ...u })),
    setEmailVerified(userId, nowMs) {
      const u = users.get(userId)
      if (u && u.emailVerifiedAt === null) u.emailVerifiedAt = nowMs
    },
    setPasswordHash(userId, passwordHash) {
      const u = users.get(userId)
      if (u) u.passwordHash = passwordHash
    },
    setTotp(userId, secret, enabledAt) {
      const u = users.get(userId)
      if (!u) return
      u.totpSecret = secret
      u.totpEnabledAt = enabledAt
      totpSteps.delete(userId)
    },
    useTotpStep(userId, step) {
      if ((totpSteps.get(userId) ?? -1) >= step) return false
      totpSteps.set(userId, step)
      return true
    },
    setRecoveryCodes: (userId, hashes) => void recovery.set(userId, new Set(hashes)),
    useRecoveryCode: (userId, hash) => recovery.get(userId)?.delete(hash) ?? false,
    countRecoveryCodes: (userId) => recovery.get(userId)?.size ?? 0,
    putMember(m) {
      const i = members.findIndex((x) => x.orgId === m.orgId && x.userId === m.userId)
      if (i >= 0) members[i] = { ...members[i]!, role: m.role }
      else members.push({ ...m })
    },
    getMember: (orgId, userId) => copy(members.find((x) => x.orgId === orgId && x.userId === userId)),
    listMembers: (orgId) => members.filter((m) => m.orgId === orgId).map((m) => ({ ...m, email: users.get(m.userId)?.email ?? '' })),
    listMemberships: (userId) => members.filter((m) => m.userId === userId).map((m) => ({ ...m })),
    removeMember(orgId, userId) {
      const i = members.findIndex((x) => x.orgId === orgId && x.userId === userId)
      if (i < 0) return false
      members.splice(i, 1)
      return true
    },
    createSession: (s) => void sessions.set(s.idHash, { ...s }),
    getSession(idHash, nowMs) {
      const s = sessions.get(idHash)
      return s && s.expiresAt > nowMs ? { ...s } : null
    },
    deleteSession: (idHash) => void sessions.delete(idHash),
    deleteSessionsOf(userId, exceptIdHash) {
      let n = 0
      for (const [k, v] of sessions) if (v.userId === userId && k !== exceptIdHash) n += Number(sessions.delete(k))
      return n
    },
    createToken: (t) => void tokens.set(t.hash, { ...t }),
    getToken(hash, kind, nowMs) {
      const t = tokens.get(hash)
      return t && t.kind === kind && t.expiresAt > nowMs ? { ...t } : null
    },
    consumeToken(hash, kind, nowMs) {
      const t = tokens.get(hash)
      if (!t || t.kind !== kind) return null
      tokens.delete(hash)
      return t.expiresAt > nowMs ? t : null
    },
    deleteTokensOf(userId, kind) {
      for (const [k, v] of tokens) if (v.kind === kind && v.userId === userId) tokens.delete(k)
    },
    listInvites: (orgId, nowMs) =>
      [...tokens.values()].filter((t) => t.kind === 'invite' && t.orgId === orgId && t.expiresAt > nowMs).sort((a, b) => a.createdAt - b.createdAt).map((t) => ({ ...t })),
    deleteInvite(orgId, hash) {
      const t = tokens.get(hash)
      if (!t || t.kind !== 'invite' || t.orgId !== orgId) return false
      return tokens.delete(hash)
    },
    takeLoginAttempt(attempt, keys, nowMs, sinceMs) {
      const lists = keys.map((k) => (failures.get(k.key) ?? []).filter((f) => f.at >= sinceMs))
      if (keys.some((k, i) => lists[i]!.length >= k.limit)) return false
      keys.forEach((k, i) => failures.set(k.key, [...lists[i]!, { at: nowMs, attempt }]))
      return true
    },
    forgetLoginAttempt(attempt) {
      for (const [k, list] of failures) failures.set(k, list.filter((f) => f.attempt !== attempt))
    },
    loginFailures: (key, sinceMs) => (failures.get(key) ?? []).filter((f) => f.at >= sinceMs).length,
    clearLoginFailures: (key) => void failures.delete(key),
    teamRequiresTwoFactor: (orgId) => twoFactorTeams.has(orgId),
    setTeamRequiresTwoFactor: (orgId, required) => void (required ? twoFactorTeams.add(orgId) : twoFactorTeams.delete(orgId)),
    addUsage(orgId, day, type, lookups, credits) {
      const k = `${orgId}\n${day}\n${type}`
      const u = usage.get(k) ?? { day, type, lookups: 0, credits: 0 }
      u.lookups += lookups
      u.credits += credits
      usage.set(k, u)
    },
    listUsage: (orgId, fromDay, toDay) =>
      [...usage.entries()]
        .filter(([k, u]) => k.startsWith(`${orgId}\n`) && u.day >= fromDay && u.day <= toDay)
        .map(([, u]) => ({ ...u }))
        .sort((a, b) => (a.day === b.day ? a.type.localeCompare(b.type) : a.day.localeCompare(b.day))),
    recordKeyCreator(orgId, keyId, userId) {
      const m = creators.get(orgId) ?? new Map<string, string>()
      m.set(keyId, userId)
      creators.set(orgId, m)
    },
    keyCreators: (orgId) => new Map(creators.get(orgId) ?? []),
    getCursor: (name) => cursors.get(name) ?? 0,
    setCursor: (name, value) => void cursors.set(name, value),
    purgeExpired(nowMs, failuresBeforeMs) {
      let n = 0
      for (const [k, v] of sessions) if (v.expiresAt <= nowMs) n += Number(sessions.delete(k))
      for (const [k, v] of tokens) if (v.expiresAt <= nowMs) n += Number(tokens.delete(k))
      for (const [k, list] of failures) {
        const kept = list.filter((f) => f.at >= failuresBeforeMs)
        n += list.length - kept.length
        if (kept.length === 0) failures.delete(k)
        else failures.set(k, kept)
      }
      return n
    },
    close: () => undefined,
  }
}
