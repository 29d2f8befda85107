/**
 * The one way a dashboard mail leaves: {@link Outbox.send} checks the mail throttle, only then composes the message
 * (which may create a one-time token) and hands it to the mailer. The throttle counts mails per kind and per account,
 * team and recipient address ({@link MAIL_LIMITS}) in the team store, so it holds across instances; a refused mail
 * says when the next may go. Links in mails come from {@link Outbox.link}: the public URL, else the address the server
 * listens on — never a request header.
 */
import type { MailMessage, Mailer } from './mail.js'
import type { MailQuota, TeamStore } from '../server/store/contracts/team-store.js'

/**
 * What a mail is for: a verification link, an invitation, an operator notice (endpoint disabled), a password-reset
 * link, or the note to the owner of an address that someone tried to sign up with it.
 */
export type MailKind = 'verify' | 'invite' | 'notice' | 'reset' | 'signup'
/** What a limit counts by: the account that causes the mail, its team, or the address mailed. */
export type MailScope = 'account' | 'team' | 'recipient'

/** At most `limit` mails of a kind per `per` in any `windowMs` (at most a day: older counts are purged daily). */
export interface MailLimit {
  per: MailScope
  limit: number
  windowMs: number
}

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/**
 * The default limits of each kind of mail (docs/dashboard.md). Why these, and why a held-back reset or sign-up mail is
 * not announced: docs/decisions.md, "Team dashboard" → "mail throttle".
 */
export const MAIL_LIMITS: Readonly<Record<MailKind, readonly MailLimit[]>> = {
  verify: [
    { per: 'account', limit: 1, windowMs: MINUTE },
    { per: 'account', limit: 5, windowMs: HOUR },
    { per: 'recipient', limit: 10, windowMs: DAY },
  ],
  invite: [
    { per: 'account', limit: 10, windowMs: HOUR },
    { per: 'team', limit: 20, windowMs: HOUR },
    { per: 'team', limit: 50, windowMs: DAY },
    { per: 'recipient', limit: 3, windowMs: DAY },
  ],
  notice: [
    { per: 'team', limit: 20, windowMs: HOUR },
    { per: 'recipient', limit: 20, windowMs: HOUR },
  ],
  reset: [
    { per: 'account', limit: 1, windowMs: MINUTE },
    { per: 'account', limit: 5, windowMs: HOUR },
    { per: 'recipient', limit: 10, windowMs: DAY },
  ],
  signup: [
    { per: 'recipient', limit: 3, windowMs: HOUR },
    { per: 'recipient', limit: 10, windowMs: DAY },
  ],
}

/** A mail to send: its kind, its recipient, and who causes it (the ids its limits count by). */
export interface MailRequest {
  kind: MailKind
  to: string
  /** The user whose action causes the mail (verification and reset: the account; invitation: the inviter). */
  account?: string
  /** The team the mail is about. */
  team?: string
}

/** Sent (and when the next of the same kind may go), or refused by the throttle until `retryAt`. */
export type MailOutcome = { sent: true; nextAt: number } | { sent: false; retryAt: number }

export interface Outbox {
  /**
   * Sends a mail if the throttle lets it go: `compose` runs only then (it may create the token the mail carries), and
   * the mail counts whether or not the relay takes it (a relay that fails is retried by the person, within limits).
   * Throws what `compose` or the mailer throws.
   */
  send(request: MailRequest, compose: () => Promise<Omit<MailMessage, 'to'>> | Omit<MailMessage, 'to'>): Promise<MailOutcome>
  /** An absolute link to `path` (`/dashboard/verify?token=…`) for a mail. */
  link(path: string): string
}

/** Checks limits given as options: each a known scope, a positive whole limit, a window of 1 s to a day. */
export function checkMailLimits(limits: Partial<Record<MailKind, readonly MailLimit[]>>): void {
  for (const [kind, list] of Object.entries(limits)) {
    if (!(kind in MAIL_LIMITS)) throw new TypeError(`dashboard.mailLimits: unknown mail kind ${JSON.stringify(kind)}`)
    for (const l of list ?? []) {
      if (!['account', 'team', 'recipient'].includes(l.per)) throw new TypeError(`dashboard.mailLimits.${kind}: per must be account, team or recipient`)
      if (!Number.isInteger(l.limit) || l.limit < 1) throw new TypeError(`dashboard.mailLimits.${kind}: limit must be a whole number of at least 1`)
      if (!Number.isInteger(l.windowMs) || l.windowMs < 1000 || l.windowMs > DAY) throw new TypeError(`dashboard.mailLimits.${kind}: windowMs must be 1000 to ${DAY}`)
    }
  }
}

/** The outbox over `teams` (where mails are counted) and `mailer`; `base()` is the origin of links (or throws). */
export function createOutbox(options: {
  teams: TeamStore
  mailer: Mailer
  nowMs: () => number
  base: () => string
  limits?: Partial<Record<MailKind, readonly MailLimit[]>>
}): Outbox {
  const limits: Record<MailKind, readonly MailLimit[]> = { ...MAIL_LIMITS, ...options.limits }
  const quotasOf = (r: MailRequest): MailQuota[] =>
    limits[r.kind].map((l) => {
      const id = l.per === 'account' ? r.account : l.per === 'team' ? r.team : r.to.toLowerCase()
      if (!id) throw new Error(`a ${r.kind} mail needs its ${l.per} (it is limited per ${l.per})`)
      return { key: `${r.kind}:${l.per}:${id}`, limit: l.limit, windowMs: l.windowMs }
    })
  return {
    async send(request, compose) {
      const reserved = await options.teams.reserveMail(quotasOf(request), options.nowMs())
      if (!reserved.ok) return { sent: false, retryAt: reserved.retryAt }
      const message = await compose()
      await options.mailer.send({ ...message, to: request.to })
      return { sent: true, nextAt: reserved.nextAt }
    },
    link: (path) => `${options.base()}${path}`,
  }
}

/**
 * Lets a mail of a form that must answer alike either way (sign-up, reset) go on after the answer: a failure, or a
 * refusal by the mail throttle, is logged and never shown (showing it would tell whether the address has an account).
 */
export function mailAfterAnswer(
  log: { info(o: object, m: string): void; warn(o: object, m: string): void } | undefined,
  what: string,
  to: string,
  sending: Promise<MailOutcome>,
): void {
  void sending.then(
    (outcome) => {
      if (!outcome.sent) log?.info({ mail_to: to, retry_at: new Date(outcome.retryAt).toISOString() }, `dashboard: ${what} mail over the mail limit; not sent`)
    },
    (err: unknown) => log?.warn({ err }, `dashboard: ${what} mail failed`),
  )
}

/** "14:05 UTC (in 3 minutes)": when a refused mail may go, for the page that says so. */
export function nextMailText(atMs: number, nowMs: number): string {
  const d = new Date(atMs)
  const clock = `${d.toISOString().slice(11, 16)} UTC`
  const day = d.toISOString().slice(0, 10) === new Date(nowMs).toISOString().slice(0, 10) ? '' : ` on ${d.toISOString().slice(0, 10)}`
  const s = Math.max(1, Math.ceil((atMs - nowMs) / 1000))
  const rel = s < 90 ? `${s} second${s === 1 ? '' : 's'}` : s < 90 * 60 ? `${Math.round(s / 60)} minutes` : `${Math.round(s / 3600)} hours`
  return `${clock}${day} (in ${rel})`
}
