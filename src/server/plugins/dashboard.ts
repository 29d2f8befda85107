/**
 * The team dashboard at /dashboard (../../dashboard/index.ts), mounted over the server's context: an encapsulated
 * plugin of its own under the /dashboard prefix (its cookies, guards, error and 404 pages). It is built when the
 * server is, so a bad dashboard option throws from createServer and `app.dashboard` is there at once.
 */
import type { FastifyInstance } from 'fastify'
import { registerDashboard, type Dashboard } from '../../dashboard/index.js'
import type { ServerParts } from './context.js'

/** Mounts the dashboard (undefined when `dashboard: false`). */
export function mountDashboard(app: FastifyInstance, parts: ServerParts): Dashboard | undefined {
  const { options, settings, storage } = parts
  if (options.dashboard === false) return undefined
  return registerDashboard(app, parts.ctx, {
    ...options.dashboard,
    ...(settings.publicUrl ? { publicUrl: settings.publicUrl } : {}),
    ...(storage.defaultTeamStore ? { defaultTeamStore: storage.defaultTeamStore } : {}),
  })
}
