/**
 * A data set as the lookups use it: the bundled data, or one installed set of a data directory. It knows every
 * source's version (for `metadata.data_sources`), and holds the IP data and email lists of the set, loaded lazily.
 * A set's files never change after it is installed, so a loaded set stays valid while a newer one is installed.
 */
import { join } from 'node:path'
import { createEmailLists, type EmailLists } from '../checks/email/lists.js'
import { createIpData, type IpData, type IpDataFiles } from '../sources/ip/ip-data.js'
import { getBundledFiles, getBundledSources } from './bundled.js'
import { DATA_SOURCE_NAMES, DATA_SOURCES, type DataSourceName } from './catalog.js'
import type { DataManifest, ManifestSource } from './manifest.js'
import { findSetFileProblem, readSetManifest, setPath } from './store.js'

/** Paths of the compiled and fetched files inside a set. */
export const SET_FILES = {
  flags: 'ip/flags.mmdb',
  asnFlags: 'ip/asn-flags.json',
  city: 'ip/dbip-city-lite.mmdb',
  asnV4: 'ip/asn-ipv4-num.csv',
  asnV6: 'ip/asn-ipv6-num.csv',
  disposable: 'email/disposable.json',
  free: 'email/free-providers.txt',
  /** raw range lists, in the layout of data/ip/lists/ */
  lists: 'lists',
} as const

/** A data set in use. */
export interface DataSet {
  /** `bundled`, or the set's id in its data directory */
  readonly id: string
  /** the set's directory (null for the bundled data) */
  readonly dir: string | null
  readonly createdAt: string | null
  /** every source with its origin, version and date */
  readonly sources: Readonly<Record<DataSourceName, ManifestSource>>
  /** `metadata.data_sources` name of each source: `tor-exits@2026-11-23T06:12Z` */
  readonly labels: Readonly<Record<DataSourceName, string>>
  readonly ip: IpData
  readonly email: EmailLists
  /** frees what this set loaded (when it was replaced); the bundled set is never released */
  release(): void
}

/** `label@version` of a source. */
export function labelOf(name: DataSourceName, source: ManifestSource): string {
  return `${DATA_SOURCES[name].label}@${source.version}`
}

function labelsOf(sources: Record<DataSourceName, ManifestSource>): Record<DataSourceName, string> {
  const out = {} as Record<DataSourceName, string>
  for (const name of DATA_SOURCE_NAMES) out[name] = labelOf(name, sources[name])
  return out
}

function ipNames(labels: Record<DataSourceName, string>): IpData['names'] {
  return { city: labels['dbip-city'], asn: labels.asn, flags: [labels.datacenter, labels.cloud, labels.vpn, labels.tor] }
}

let bundledSet: DataSet | undefined

/** The bundled data as a set (one per process). */
export function getBundledDataSet(): DataSet {
  if (bundledSet) return bundledSet
  const sources = getBundledSources()
  const labels = labelsOf(sources)
  const f = getBundledFiles()
  const files: IpDataFiles = { cityV4: f.cityV4, cityV6: f.cityV6, asnV4: f.asnV4, asnV6: f.asnV6, flags: f.flags, asnFlags: f.asnFlags }
  bundledSet = {
    id: 'bundled',
    dir: null,
    createdAt: null,
    sources,
    labels,
    ip: createIpData(files, ipNames(labels)),
    email: createEmailLists({ disposable: null, free: null }),
    release() {},
  }
  return bundledSet
}

/**
 * The sources of a manifest with the bundled ones (`origin: 'bundled'`) described by the running package (its
 * bundled files are the ones used, whatever version the manifest's writer had).
 */
export function resolveSources(manifest: DataManifest): Record<DataSourceName, ManifestSource> {
  const bundled = getBundledSources()
  const out = {} as Record<DataSourceName, ManifestSource>
  for (const name of DATA_SOURCE_NAMES) {
    const s = manifest.sources[name]
    out[name] = s.origin === 'bundled' ? bundled[name] : s
  }
  return out
}

/**
 * Opens installed set `id` of data directory `dir`: reads and checks its manifest, and that every file it names is
 * there with its size. Throws an Error naming the problem. Nothing else is read until a lookup needs it.
 */
export function openDataSet(dir: string, id: string): DataSet {
  const manifest = readSetManifest(dir, id)
  const problem = findSetFileProblem(dir, manifest)
  if (problem) throw new Error(`data set ${id} in ${dir} is damaged: ${problem}`)
  const base = setPath(dir, id)
  const built = new Set(manifest.built.map((b) => b.path))
  const bundled = getBundledFiles()
  const has = (p: string) => built.has(p)
  const sources = resolveSources(manifest)
  const labels = labelsOf(sources)
  const city = manifest.sources['dbip-city'].origin === 'bundled' ? null : join(base, SET_FILES.city)
  const asn = manifest.sources.asn.origin !== 'bundled'
  const files: IpDataFiles = {
    cityV4: city ?? bundled.cityV4,
    cityV6: city ?? bundled.cityV6,
    asnV4: asn ? join(base, SET_FILES.asnV4) : bundled.asnV4,
    asnV6: asn ? join(base, SET_FILES.asnV6) : bundled.asnV6,
    flags: has(SET_FILES.flags) ? join(base, SET_FILES.flags) : bundled.flags,
    asnFlags: has(SET_FILES.asnFlags) ? join(base, SET_FILES.asnFlags) : bundled.asnFlags,
  }
  // content ids from the manifest: unchanged files (hard-linked from the previous set) share their loaded data
  const sha = new Map<string, string>([...Object.values(manifest.sources).flatMap((x) => x.files), ...manifest.built].map((f) => [f.path, `sha256:${f.sha256}`]))
  const ids: Partial<Record<keyof IpDataFiles, string>> = {}
  const idOf = (key: keyof IpDataFiles, rel: string) => {
    if (files[key] === join(base, rel)) {
      const v = sha.get(rel)
      if (v) ids[key] = v
    }
  }
  idOf('cityV4', SET_FILES.city)
  idOf('cityV6', SET_FILES.city)
  idOf('asnV4', SET_FILES.asnV4)
  idOf('asnV6', SET_FILES.asnV6)
  idOf('flags', SET_FILES.flags)
  idOf('asnFlags', SET_FILES.asnFlags)
  const ip = createIpData(files, ipNames(labels), ids)
  return {
    id,
    dir: base,
    createdAt: manifest.created_at,
    sources,
    labels,
    ip,
    email: createEmailLists({
      disposable: manifest.sources.disposable.origin === 'bundled' ? null : join(base, SET_FILES.disposable),
      free: has(SET_FILES.free) ? join(base, SET_FILES.free) : null,
    }),
    release: () => ip.release(),
  }
}
