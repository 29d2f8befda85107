import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type Options } from 'tsup'
import { SERVER_PACKAGE_NAMES } from './src/server/packages.js'

type Plugin = NonNullable<Options['esbuildPlugins']>[number]

const LOADER = fileURLToPath(new URL('./src/server/packages.ts', import.meta.url))
const SERVER_PACKAGE = new RegExp(`^(${SERVER_PACKAGE_NAMES.map((n) => n.replace(/[/.]/g, '\\$&')).join('|')})$`)

/**
 * Every import of a server package (fastify, better-sqlite3, pg, …: optional peer dependencies) becomes a call of
 * src/server/packages.ts's loadServerPackage, which names every missing one and the command that installs them,
 * instead of Node's resolver failing on the first (for ESM, before any code of riskcheck/server could run).
 */
const serverPackages: Plugin = {
  name: 'riskcheck-server-packages',
  setup(build) {
    build.onResolve({ filter: SERVER_PACKAGE }, (args) => ({ path: args.path, namespace: 'riskcheck-server-package' }))
    build.onLoad({ filter: /.*/, namespace: 'riskcheck-server-package' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(LOADER)}).loadServerPackage(${JSON.stringify(args.path)})`,
      loader: 'js',
      resolveDir: dirname(LOADER),
    }))
  },
}

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'scoring/index': 'src/scoring/index.ts',
    cli: 'src/cli/bin.ts',
    'server/index': 'src/server/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  splitting: true,
  shims: true,
  // tsup leaves dependencies and peer dependencies external; the server's go through the plugin instead
  noExternal: [SERVER_PACKAGE],
  esbuildPlugins: [serverPackages],
})
