import type { Role } from '../server/store/contracts/team-store.js'

/** Roles of a team member (docs/dashboard.md): owners and admins manage members and keys; developers use them. */
export const ROLES: readonly Role[] = ['owner', 'admin', 'developer']
