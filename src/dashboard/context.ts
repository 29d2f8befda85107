/**
 * What every dashboard page handler gets: the service context (the same store and services the HTTP API routes
 * use), the dashboard's own {@link TeamStore}, the outbox every mail goes through, and helpers to authorise a request
 * by team and role.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ServerContext } from '../server/routes/types.js'
import type { OrgRecord } from '../accounts/types.js'
import { layout, type Html, type LayoutContext } from './html.js'
import type { Outbox } from './outbox.js'
import type { MembershipRecord, Role, SessionRecord, TeamStore, UserRecord } from '../server/store/contracts/team-store.js'

/**
 * A refusal rendered as an HTML page with its status (404 for anything outside the caller's teams). With
 * `location`, a GET is sent there instead (a team that requires two-factor sign-in sends to its set-up).
 */
export class DashboardError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly location?: string,
  ) {
    super(message)
  }
}

export const notFound = () => new DashboardError(404, 'Not found.')

/** Role order: an owner may do what an admin may, an admin what a developer may. */
const RANK: Record<Role, number> = { developer: 1, admin: 2, owner: 3 }
export const atLeast = (role: Role, min: Role) => RANK[role] >= RANK[min]

/** The signed-in person of a request. */
export interface Viewer {
  user: UserRecord
  session: SessionRecord
}

/** A signed-in member looking at one of their teams. */
export interface TeamView extends Viewer {
  org: OrgRecord
  member: MembershipRecord
  teams: Array<{ id: string; name: string }>
  /** `/dashboard/t/<org id>` */
  base: string
}

export interface Dash {
  svc: ServerContext
  teams: TeamStore
  /** The one way a mail leaves (throttled; links from the public URL). */
  outbox: Outbox
  nowMs(): number
  log(): { info(o: object, m: string): void; warn(o: object, m: string): void; error(o: object, m: string): void } | undefined
  /** The session's viewer or null. */
  viewer(request: FastifyRequest): Promise<Viewer | null>
  /** The viewer as a member of `orgId` with at least `min`; 404 for a team they are not in, 403 for a lower role. */
  team(request: FastifyRequest, orgId: string, min?: Role): Promise<TeamView>
  /** Sends a page. */
  page(reply: FastifyReply, ctx: LayoutContext, body: Html, status?: number): FastifyReply
  /** The page context of a team view. */
  teamLayout(v: TeamView, title: string, nav: string, flash?: LayoutContext['flash']): LayoutContext
  /** Starts a signed-in session (sets the cookie). */
  signIn(reply: FastifyReply, request: FastifyRequest, userId: string): Promise<void>
  /**
   * Counts a sign-in attempt (a password or a second-factor code about to be checked) under each key before it is
   * checked: `ip:` keys get ten times the per-address limit, every other key (`email:…`, `mfa:<user>`) the limit
   * itself. Returns the attempt's id (give it to `teams.forgetLoginAttempt` when it succeeds), or null when a limit
   * is reached (answer 429 with {@link Dash.retryAfter}).
   */
  takeAttempt(keys: readonly string[]): Promise<string | null>
  /** The `Retry-After` of a refused attempt, in seconds. */
  readonly retryAfter: number
}

export const MFA_COOKIE = 'rc_mfa'

export const SESSION_COOKIE = 'rc_session'
export const PRE_COOKIE = 'rc_pre'

export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')
export const randomToken = () => randomBytes(32).toString('base64url')

/** Constant-time string equality. */
export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a === '' || b === '') return false
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** A form body as a record of strings (repeated fields as arrays). */
export type Form = Record<string, string | string[] | undefined>

/** One field of a form as a trimmed string ('' when absent). */
export function field(body: unknown, name: string): string {
  const v = (body as Form | undefined)?.[name]
  const s = Array.isArray(v) ? v[0] : v
  return typeof s === 'string' ? s.trim() : ''
}

/**
 * A password field exactly as typed ('' when absent): never trimmed, so that sign-up, sign-in, reset and every other
 * form treat a password with surrounding spaces alike (the hash normalises it to NFKC, nothing more).
 */
export function passwordField(body: unknown, name: string): string {
  const v = (body as Form | undefined)?.[name]
  const s = Array.isArray(v) ? v[0] : v
  return typeof s === 'string' ? s : ''
}

/** A repeated field (checkboxes) as a list. */
export function fields(body: unknown, name: string): string[] {
  const v = (body as Form | undefined)?.[name]
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((s): s is string => typeof s === 'string')
}

export { layout }

/** Fixed messages of `?done=` after a redirect (never text from the URL itself). */
const DONE: Record<string, string> = {
  revoked: 'The key is revoked; requests with it fail from now on.',
  invited: 'Invitation sent.',
  role: 'Role changed.',
  removed: 'Member removed.',
  joined: 'You joined the team.',
  enabled: 'The endpoint is enabled again.',
  resend: 'Missed deliveries are queued again.',
  ping: 'A ping event is queued for this endpoint.',
  deleted: 'Deleted.',
  cancelled: 'The job is cancelled.',
  finished: 'The job had finished before it could be cancelled.',
  retried: 'The failed rows are queued again.',
  created: 'Created.',
  uninvited: 'Invitation withdrawn.',
  everywhere: 'You are signed out everywhere: every session of your account has ended.',
  'two-factor-off': 'Two-factor sign-in is off.',
  'team-two-factor-on': 'Members of this team now need two-factor sign-in.',
  'team-two-factor-off': 'Two-factor sign-in is now optional for this team.',
}

/** The flash message of a `?done=` code, if it is one of ours. */
export function doneFlash(query: unknown): { kind: 'ok'; text: string } | undefined {
  const code = (query as { done?: unknown } | undefined)?.done
  const text = typeof code === 'string' ? DONE[code] : undefined
  return text ? { kind: 'ok', text } : undefined
}
