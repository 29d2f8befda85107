/** The dashboard's store in memory (tests, and servers whose service store is not SQLite). See ./types.ts. */
import type { MailQuota, MembershipRecord, SessionRecord, TeamStore, TokenRecord, UsageDay, UserRecord } from '../../server/store/contracts/team-store.js'

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
  const mailLog = memoryMailLog()
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
    createAccount(input, membership, nowMs) {
      if ([...users.values()].some((u) => u.email === input.email)) return null
      const u: UserRecord = { ...input, emailVerifiedAt: null, createdAt: nowMs, totpSecret: null, totpEnabledAt: null }
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
    reserveMail: mailLog.reserveMail,
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
      return n + pruneLog(failures, (f) => f.at >= failuresBeforeMs) + mailLog.purge(failuresBeforeMs)
    },
    close: () => undefined,
  }
}

/** The mail log in memory: the mail throttle's check-and-count, and the purge of mails older than `beforeMs`. */
function memoryMailLog(): Pick<TeamStore, 'reserveMail'> & { purge(beforeMs: number): number } {
  const mails = new Map<string, number[]>()
  /** When `q` has room again after the mails under its key (its `limit`-th newest in the window leaves it), or null. */
  const fullUntil = (q: MailQuota, nowMs: number): number | null => {
    const inWindow = (mails.get(q.key) ?? []).filter((t) => t > nowMs - q.windowMs).sort((a, b) => b - a)
    return inWindow.length >= q.limit ? inWindow[q.limit - 1]! + q.windowMs : null
  }
  return {
    reserveMail(quotas, nowMs) {
      const full = quotas.map((q) => fullUntil(q, nowMs)).filter((t): t is number => t !== null)
      if (full.length > 0) return { ok: false, retryAt: Math.max(...full) }
      for (const key of new Set(quotas.map((q) => q.key))) mails.set(key, [...(mails.get(key) ?? []), nowMs])
      return { ok: true, nextAt: Math.max(nowMs, ...quotas.map((q) => fullUntil(q, nowMs) ?? nowMs)) }
    },
    purge: (beforeMs) => pruneLog(mails, (t) => t >= beforeMs),
  }
}

/** Drops the entries of each list of `log` that `keep` refuses (and the lists left empty); returns how many went. */
function pruneLog<T>(log: Map<string, T[]>, keep: (entry: T) => boolean): number {
  let n = 0
  for (const [k, list] of log) {
    const kept = list.filter(keep)
    n += list.length - kept.length
    if (kept.length === 0) log.delete(k)
    else log.set(k, kept)
  }
  return n
}
