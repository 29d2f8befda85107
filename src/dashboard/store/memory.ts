/** The dashboard's store in memory (tests, and servers whose service store is not SQLite). See ./types.ts. */
import type { MailQuota, MembershipRecord, SessionRecord, TeamStore, TokenRecord, UsageDay, UserRecord } from './types.js'

export function createMemoryTeamStore(): TeamStore {
  const users = new Map<string, UserRecord>()
  const members: MembershipRecord[] = []
  const sessions = new Map<string, SessionRecord>()
  const tokens = new Map<string, TokenRecord>()
  const failures = new Map<string, number[]>()
  const mails = new Map<string, number[]>()
  /** When `q` has room again after the mails under its key (its `limit`-th newest in the window leaves it), or null. */
  const fullUntil = (q: MailQuota, nowMs: number): number | null => {
    const inWindow = (mails.get(q.key) ?? []).filter((t) => t > nowMs - q.windowMs).sort((a, b) => b - a)
    return inWindow.length >= q.limit ? inWindow[q.limit - 1]! + q.windowMs : null
  }
  const usage = new Map<string, UsageDay>()
  const cursors = new Map<string, number>()
  const creators = new Map<string, Map<string, string>>()
  const copy = <T>(v: T | undefined): T | null => (v === undefined ? null : { ...v })

  return {
    createUser(input, nowMs) {
      if ([...users.values()].some((u) => u.email === input.email)) return null
      const u: UserRecord = { ...input, emailVerifiedAt: null, createdAt: nowMs }
      users.set(u.id, u)
      return { ...u }
    },
    createAccount(input, membership, nowMs) {
      if ([...users.values()].some((u) => u.email === input.email)) return null
      const u: UserRecord = { ...input, emailVerifiedAt: null, createdAt: nowMs }
      users.set(u.id, u)
      members.push({ orgId: membership.orgId, userId: u.id, role: membership.role, createdAt: nowMs })
      return { ...u }
    },
    getUser: (id) => copy(users.get(id)),
    getUserByEmail: (email) => copy([...users.values()].find((u) => u.email === email)),
    listUsers: () => [...users.values()].sort((a, b) => a.createdAt - b.createdAt).map((u) => ({ ...u })),
    setEmailVerified(userId, nowMs) {
      const u = users.get(userId)
      if (u && u.emailVerifiedAt === null) u.emailVerifiedAt = nowMs
    },
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
    listInvites: (orgId, nowMs) =>
      [...tokens.values()].filter((t) => t.kind === 'invite' && t.orgId === orgId && t.expiresAt > nowMs).sort((a, b) => a.createdAt - b.createdAt).map((t) => ({ ...t })),
    deleteInvite(orgId, hash) {
      const t = tokens.get(hash)
      if (!t || t.kind !== 'invite' || t.orgId !== orgId) return false
      return tokens.delete(hash)
    },
    recordLoginFailure(key, nowMs, sinceMs) {
      const list = (failures.get(key) ?? []).filter((t) => t >= sinceMs)
      list.push(nowMs)
      failures.set(key, list)
      return list.length
    },
    loginFailures: (key, sinceMs) => (failures.get(key) ?? []).filter((t) => t >= sinceMs).length,
    clearLoginFailures: (key) => void failures.delete(key),
    reserveMail(quotas, nowMs) {
      const full = quotas.map((q) => fullUntil(q, nowMs)).filter((t): t is number => t !== null)
      if (full.length > 0) return { ok: false, retryAt: Math.max(...full) }
      for (const key of new Set(quotas.map((q) => q.key))) mails.set(key, [...(mails.get(key) ?? []), nowMs])
      return { ok: true, nextAt: Math.max(nowMs, ...quotas.map((q) => fullUntil(q, nowMs) ?? nowMs)) }
    },
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
      for (const log of [failures, mails]) {
        for (const [k, list] of log) {
          const kept = list.filter((t) => t >= failuresBeforeMs)
          n += list.length - kept.length
          if (kept.length === 0) log.delete(k)
          else log.set(k, kept)
        }
      }
      return n
    },
    close: () => undefined,
  }
}
