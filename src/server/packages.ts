/**
 * The packages the HTTP service needs beyond the library. They are optional peer dependencies of riskcheck, so the
 * library (lookups, scoring, bulk, data, policy and the lookup commands) installs without them and without a C++
 * toolchain; `riskcheck serve|worker|admin` and `import 'riskcheck/server'` check for them first and print the one
 * command that installs them (docs/decisions.md, "Installing").
 *
 * The build loads every server package through {@link loadServerPackage} (tsup.config.ts), so a missing one is
 * reported by this module instead of by Node's resolver.
 */
import { createRequire } from 'node:module'

/** Each package of the HTTP service with the range riskcheck is tested with (package.json `peerDependencies`). */
export const SERVER_PACKAGES = {
  fastify: '^5.12.8',
  '@fastify/cookie': '~11.0.2',
  '@fastify/formbody': '^9.0.1',
  'better-sqlite3': '^12.11.1',
  pg: '^8.23.1',
  ioredis: '^5.11.1',
  bullmq: '^5.81.5',
  nodemailer: '^10.6.0',
  'prom-client': '^15.1.3',
  uqr: '^0.1.3',
} as const

/** A package of the HTTP service. */
export type ServerPackage = keyof typeof SERVER_PACKAGES

/**
 * Added to the install command though riskcheck does not load it: Fastify's `inject` (the dashboard's playground)
 * comes from light-my-request, whose 6.8 pulls cookie 2 (Node 22 or later, ESM only). Held at 6.6, which Fastify then
 * shares, the service's tree fits riskcheck's `engines`.
 */
export const SERVER_INSTALL_PINS = { 'light-my-request': '~6.6.0' } as const

/** Declarations riskcheck/server's types use (Fastify's, better-sqlite3's and pg's types refer to Node.js's). */
export const SERVER_TYPE_PACKAGES = ['@types/node', '@types/better-sqlite3', '@types/pg'] as const

/** Every package name of {@link SERVER_PACKAGES}, in install order. */
export const SERVER_PACKAGE_NAMES = Object.keys(SERVER_PACKAGES) as ServerPackage[]

/**
 * The one command that installs the HTTP service's packages next to riskcheck.
 *
 * @example serverInstallCommand() // 'npm install fastify@^5.12.8 @fastify/cookie@~11.0.2 …'
 */
export function serverInstallCommand(): string {
  const all = { ...SERVER_PACKAGES, ...SERVER_INSTALL_PINS }
  return `npm install ${Object.entries(all)
    .map(([name, range]) => `${name}@${range}`)
    .join(' ')}`
}

const requireHere = createRequire(import.meta.url)

/** The server packages that cannot be resolved from riskcheck's own place. */
export function missingServerPackages(): ServerPackage[] {
  return SERVER_PACKAGE_NAMES.filter((name) => {
    try {
      requireHere.resolve(name)
      return false
    } catch {
      return true
    }
  })
}

/** What is missing and the command that installs it, for `what` (`riskcheck serve`, `riskcheck/server`). */
export function serverPackagesMessage(what: string, missing: readonly string[]): string {
  return [
    `${what} needs the HTTP service's packages, and ${missing.length === SERVER_PACKAGE_NAMES.length ? 'none of them is installed' : `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not installed`}.`,
    'riskcheck installs without them (they are optional peer dependencies: the library needs no database and no C++ toolchain).',
    'Install them in the project that has riskcheck:',
    '',
    `  ${serverInstallCommand()}`,
    '',
  ].join('\n')
}

/** Thrown when a server package is loaded and one of them is not installed. */
export class ServerPackagesMissingError extends Error {
  /** a stable code, as Node's own `MODULE_NOT_FOUND` */
  readonly code = 'RISKCHECK_SERVER_PACKAGES_MISSING'
  constructor(
    /** the packages that are not installed */
    readonly missing: readonly string[],
    what = 'riskcheck/server',
  ) {
    super(serverPackagesMessage(what, missing))
    this.name = 'ServerPackagesMissingError'
  }
}

/**
 * Loads a server package (the build routes every `import … from '<server package>'` here). When it cannot be
 * found, throws a {@link ServerPackagesMissingError} naming every missing server package and the install command.
 */
export function loadServerPackage(name: ServerPackage): unknown {
  try {
    return requireHere(name)
  } catch (e) {
    const missing = (e as { code?: unknown }).code === 'MODULE_NOT_FOUND' ? missingServerPackages() : []
    // installed but broken (a module of its own missing): Node's error says more than ours would
    if (missing.length === 0) throw e
    throw new ServerPackagesMissingError(missing)
  }
}
