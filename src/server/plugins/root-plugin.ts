/**
 * The shape of the server's plugins: a Fastify plugin over the {@link ServerParts}, marked `skip-override` (what the
 * fastify-plugin package sets, with its name) so its hooks, handlers and routes belong to the root instance and apply to every route,
 * not to an encapsulated child.
 */
import type { FastifyInstance, FastifyPluginCallback } from 'fastify'
import type { ServerParts } from './context.js'

/** A Fastify plugin of the server, named for Fastify's errors and `printPlugins()`. */
export function rootPlugin(name: string, register: (app: FastifyInstance, parts: ServerParts) => void): FastifyPluginCallback<ServerParts> {
  const plugin: FastifyPluginCallback<ServerParts> = (app, parts, done) => {
    register(app, parts)
    done()
  }
  return Object.assign(plugin, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: name,
    [Symbol.for('plugin-meta')]: { name },
  })
}
