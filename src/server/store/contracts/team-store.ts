/**
 * The dashboard's own storage (people, sessions, memberships, tokens, sign-in and mail counters, TOTP secrets, team
 * settings, daily usage, the mail cursor) and its records. Implementations: ../sqlite/dashboard.ts (a file or
 * `:memory:`), ../postgres/dashboard.ts, held to the contract suite test/store-contract/team-store-contract.ts;
 * times are unix ms passed in by the caller. What it stores and how secrets are kept: docs/decisions.md, "Team
 * dashboard" → "own storage" and "passwords and sessions".
 */

import type { Awaitable } from '../../../awaitable.js'

export type { Awaitable }

/** Roles of a team member (docs/dashboard.md): owners and admins manage members and keys; developers use them. */
export type Role = 'owner' | 'admin' | 'developer'

export interface UserRecord {
  id: string
  /** Lower-cased. */
  email: string
  passwordHash: string
  emailVerifiedAt: number | null
  createdAt: number
  /**
   * The TOTP secret (base32) of two-factor sign-in, set at enrolment; null without one. Two-factor sign-in is on
   * once `totpEnabledAt` is set (a first code confirmed it); a secret without it is an enrolment in progress.
   */
  totpSecret: string | null
  totpEnabledAt: number | null
}

export interface MembershipRecord {
  orgId: string
  userId: string
  role: Role
  createdAt: number
}

export interface SessionRecord {
  /** SHA-256 (hex) of the session id in the cookie. */
  idHash: string
  userId: string
  /** The session's CSRF token (sent in every form). */
  csrf: string
  createdAt: number
  expiresAt: number
}

/**
 * Kinds of one-time token: `verify` (email verification link), `invite` (invitation to a team), `reset` (password
 * reset link, 1 hour), `mfa` (a sign-in whose password was right and that waits for its second factor, 5 minutes).
 */
export const TOKEN_KINDS = ['verify', 'invite', 'reset', 'mfa'] as const
export type TokenKind = (typeof TOKEN_KINDS)[number]

/** A one-time token (see {@link TOKEN_KINDS}). */
export interface TokenRecord {
  /** SHA-256 (hex) of the token in the link or cookie. */
  hash: string
  kind: TokenKind
  /** Invite: the inviting user. Any other kind: the user it is for. */
  userId: string
  /** Invite: the team and role offered to `email`. */
  orgId: string | null
  email: string
  role: Role | null
  createdAt: number
  expiresAt: number
}

/** One day of one lookup type of a team (live lookups made through the API). */
export interface UsageDay {
  /** `YYYY-MM-DD` (UTC). */
  day: string
  type: string
  lookups: number
  credits: number
}

/** One limit of the mail throttle: at most `limit` mails counted under `key` in any `windowMs` (at most a day). */
export interface MailQuota {
  key: string
  limit: number
  windowMs: number
}

/** The answer of {@link TeamStore.reserveMail}. */
export type MailReservation =
  /** Counted; `nextAt` is the earliest time the same quotas let another mail go (`nowMs` when at once). */
  | { ok: true; nextAt: number }
  /** Nothing counted: a quota is full until `retryAt`. */
  | { ok: false; retryAt: number }

export interface TeamStore {
  /** Creates a user; null when the email is taken. */
  createUser(input: { id: string; email: string; passwordHash: string }, nowMs: number): Awaitable<UserRecord | null>
  /**
   * Creates a user and their first membership (a sign-up: the owner of a new team) in one transaction; null, with
   * nothing written, when the email is taken. Either both rows are written or neither.
   */
  createAccount(input: { id: string; email: string; passwordHash: string }, membership: { orgId: string; role: Role }, nowMs: number): Awaitable<UserRecord | null>
  getUser(id: string): Awaitable<UserRecord | null>
  getUserByEmail(email: string): Awaitable<UserRecord | null>
  setEmailVerified(userId: string, nowMs: number): Awaitable<void>
  setPasswordHash(userId: string, passwordHash: string): Awaitable<void>
  /**
   * Sets the TOTP secret and when two-factor sign-in was turned on: `(secret, null)` starts an enrolment,
   * `(secret, t)` turns it on, `(null, null)` turns it off. Any change forgets the last step used.
   */
  setTotp(userId: string, secret: string | null, enabledAt: number | null): Awaitable<void>
  /**
   * Records that the TOTP code of time step `step` was used: true when `step` is later than every step used before
   * (atomically, so of two requests with the same code one wins), false for a code used already (RFC 6238 §5.2).
   */
  useTotpStep(userId: string, step: number): Awaitable<boolean>
  /** Replaces the user's recovery codes (their SHA-256 hashes). */
  setRecoveryCodes(userId: string, hashes: readonly string[]): Awaitable<void>
  /** Takes one recovery code (once): true when it was one of the user's. */
  useRecoveryCode(userId: string, hash: string): Awaitable<boolean>
  countRecoveryCodes(userId: string): Awaitable<number>
  /** Every user, oldest first (`riskcheck admin user list`). */
  listUsers(): Awaitable<UserRecord[]>

  /** Adds (or changes the role of) a member. */
  putMember(m: MembershipRecord): Awaitable<void>
  getMember(orgId: string, userId: string): Awaitable<MembershipRecord | null>
  /** Members of a team with their email, oldest first. */
  listMembers(orgId: string): Awaitable<Array<MembershipRecord & { email: string }>>
  /** Teams of a user, oldest membership first. */
  listMemberships(userId: string): Awaitable<MembershipRecord[]>
  removeMember(orgId: string, userId: string): Awaitable<boolean>

  createSession(s: SessionRecord): Awaitable<void>
  /** The session, or null when unknown or expired at `nowMs`. */
  getSession(idHash: string, nowMs: number): Awaitable<SessionRecord | null>
  deleteSession(idHash: string): Awaitable<void>
  /** Ends every session of a user but `exceptIdHash` (none: all). Returns how many ended. */
  deleteSessionsOf(userId: string, exceptIdHash?: string): Awaitable<number>

  createToken(t: TokenRecord): Awaitable<void>
  /** A token without taking it; null when unknown, of another kind or expired. */
  getToken(hash: string, kind: TokenKind, nowMs: number): Awaitable<TokenRecord | null>
  /** Takes a token (once): returns it and deletes it; null when unknown, of another kind or expired. */
  consumeToken(hash: string, kind: TokenKind, nowMs: number): Awaitable<TokenRecord | null>
  /** Deletes every token of `kind` for a user (not invites: those belong to the inviter). */
  deleteTokensOf(userId: string, kind: Exclude<TokenKind, 'invite'>): Awaitable<void>
  /** Pending (unexpired) invites of a team. */
  listInvites(orgId: string, nowMs: number): Awaitable<TokenRecord[]>
  deleteInvite(orgId: string, hash: string): Awaitable<boolean>

  /**
   * Counts a sign-in attempt under each of `keys` before its password (or code) is checked: atomically — in one
   * transaction, and on PostgreSQL under a lock per key, so every server sharing the database counts together — it
   * is refused, and nothing recorded, when any key already has `limit` attempts since `sinceMs`. An attempt stays
   * counted (as a failure) unless {@link forgetLoginAttempt} takes it back. Returns whether it was counted.
   */
  takeLoginAttempt(attempt: string, keys: ReadonlyArray<{ key: string; limit: number }>, nowMs: number, sinceMs: number): Awaitable<boolean>
  /** Takes back the counts of an attempt that succeeded. */
  forgetLoginAttempt(attempt: string): Awaitable<void>
  /** Attempts counted under `key` since `sinceMs`. */
  loginFailures(key: string, sinceMs: number): Awaitable<number>
  clearLoginFailures(key: string): Awaitable<void>

  /** Whether a team's owners require two-factor sign-in of its members (false when never set). */
  teamRequiresTwoFactor(orgId: string): Awaitable<boolean>
  setTeamRequiresTwoFactor(orgId: string, required: boolean): Awaitable<void>

  /**
   * The mail throttle, atomic across instances: when every quota has room at `nowMs` (fewer than `limit` mails under
   * its key in the `windowMs` before it), counts one mail under each key and says when the next may go; else counts
   * nothing and says when the fullest quota has room again.
   */
  reserveMail(quotas: readonly MailQuota[], nowMs: number): Awaitable<MailReservation>

  /** Adds lookups and credits to a team's day of a lookup type. */
  addUsage(orgId: string, day: string, type: string, lookups: number, credits: number): Awaitable<void>
  /** Usage days of a team in [fromDay, toDay], by day then type. */
  listUsage(orgId: string, fromDay: string, toDay: string): Awaitable<UsageDay[]>

  /** Remembers who created an API key (developers may revoke only their own). */
  recordKeyCreator(orgId: string, keyId: string, userId: string): Awaitable<void>
  /** Creator of each key of a team that was made in the dashboard: key id → user id. */
  keyCreators(orgId: string): Awaitable<Map<string, string>>

  /** A named cursor (e.g. the last operator notice mailed); 0 when never set. */
  getCursor(name: string): Awaitable<number>
  setCursor(name: string, value: number): Awaitable<void>

  /**
   * Deletes expired sessions and tokens, and sign-in failures and counted mails older than `failuresBeforeMs`.
   * Returns how many rows went.
   */
  purgeExpired(nowMs: number, failuresBeforeMs: number): Awaitable<number>

  close(): Awaitable<void>
}
