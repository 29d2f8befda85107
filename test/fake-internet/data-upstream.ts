/**
 * A loopback HTTP server that plays the upstreams of `riskcheck data update`: the Tor Project's exit list, the
 * X4BNet / lord-alfred range lists (from data/ip/lists/), the disposable-domain list, DB-IP's monthly downloads and
 * jsDelivr (package API with SHA-256 checksums, and the CDN). Every route can be replaced per test: a body, a status,
 * or a broken transfer (a body cut short of its Content-Length).
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import type { DataSourceName, UpstreamUrls } from '../../src/data/catalog.js'
import { MmdbWriter } from '../../src/data/mmdb-writer.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** One answer of the fake upstream. */
export interface Route {
  status?: number
  body?: string | Buffer
  /** send only this many bytes of the body, then drop the connection (Content-Length announces all of it) */
  cutAt?: number
  /** answer after this many ms */
  delayMs?: number
}

/** The fake upstream. */
export interface DataUpstream {
  url: string
  /** replaces (or adds) the answer of a path */
  set(path: string, route: Route): void
  /** requests seen (paths) */
  readonly requests: string[]
  /** `--source` overrides pointing every source at this server */
  sources(): Record<DataSourceName, string>
  /** the default upstream locations pointed at this server (the update's @internal `upstreams` option) */
  upstreams(): UpstreamUrls
  close(): Promise<void>
}

/** The bundled Tor snapshot plus extra addresses: one address per line. */
export function torList(extra: readonly string[] = []): string {
  return readFileSync(join(ROOT, 'data/ip/lists/secops-tor-ip-addresses/tor-exit-nodes.lst'), 'utf8').trimEnd() + '\n' + extra.map((a) => `${a}\n`).join('')
}

/** The bundled disposable-email-domains package's lists, plus extra exact domains. */
export function disposableLists(extra: readonly string[] = []): { index: string; wildcard: string } {
  const dir = join(ROOT, 'node_modules/disposable-email-domains')
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as string[]
  return { index: JSON.stringify([...index, ...extra]), wildcard: readFileSync(join(dir, 'wildcard.json'), 'utf8') }
}

/**
 * A small city database in DB-IP's Lite schema (MaxMind-style records), built at `built`: 81.2.69.0/24 London,
 * 2001:db8::/32 Berlin.
 */
export function cityDb(built = new Date('2026-11-01T00:00:00Z')): Buffer {
  const w = new MmdbWriter({ ipVersion: 6, databaseType: 'DBIP-City-Lite', languages: ['en'], buildEpoch: Math.floor(built.getTime() / 1000) })
  const place = (city: string, cc: string, country: string, lat: number, lon: number) => ({
    city: { names: { en: city } },
    country: { iso_code: cc, names: { en: country } },
    continent: { code: 'EU', names: { en: 'Europe' } },
    location: { latitude: lat, longitude: lon },
  })
  w.insert('81.2.69.0/24', place('London', 'GB', 'United Kingdom', 51.5142, -0.0931))
  w.insert('2001:db8::/32', place('Berlin', 'DE', 'Germany', 52.5244, 13.4105))
  return w.toBuffer()
}

/** A small ASN table in the `-num` layout: 81.2.69.0/24 → AS64501, 2001:db8::/32 → AS64502. */
export function asnCsv(): { v4: string; v6: string } {
  const a = (81 << 24) + (2 << 16) + (69 << 8)
  const v6start = 0x20010db8n << 96n
  const v6end = v6start + (1n << 96n) - 1n
  return { v4: `${a},${a + 255},64501,"Example Transit, Inc."\n`, v6: `${v6start},${v6end},64502,Example Six\n` }
}

/**
 * Starts the fake upstream with working answers for every source (month: the DB-IP month to publish; cityBuilt: the
 * city database's build date, its data date once installed, default 2026-11-01).
 */
export async function startDataUpstream(
  options: { month: string; torExtra?: string[]; asnVersion?: string; cityBuilt?: Date } = { month: '2026-11' },
): Promise<DataUpstream> {
  const routes = new Map<string, Route>()
  const requests: string[] = []
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string
    requests.push(req.url ?? '/')
    const route = routes.get(req.url ?? '') ?? routes.get(path)
    if (!route) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
      return
    }
    const body = route.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(route.body) ? route.body : Buffer.from(route.body)
    const answer = () => {
      res.writeHead(route.status ?? 200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) })
      if (route.cutAt !== undefined) {
        res.write(body.subarray(0, route.cutAt), () => res.socket?.destroy())
        return
      }
      res.end(body)
    }
    if (route.delayMs) setTimeout(answer, route.delayMs)
    else answer()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  // range lists: the bundled snapshot, served in the upstream layout
  const { IP_LISTS } = await import('../../src/data/ip-lists.js')
  for (const f of IP_LISTS) {
    if (f.source === 'tor') continue
    try {
      routes.set(`/lists/${f.path}`, { body: readFileSync(join(ROOT, 'data/ip/lists', f.path)) })
    } catch {
      // an optional file the snapshot does not have: 404, as upstream
    }
  }
  routes.set('/tor/torbulkexitlist', { body: torList(options.torExtra ?? []) })
  const disp = disposableLists()
  routes.set('/disposable/index.json', { body: disp.index })
  routes.set('/disposable/wildcard.json', { body: disp.wildcard })
  routes.set(`/dbip/dbip-city-lite-${options.month}.mmdb.gz`, { body: gzipSync(cityDb(options.cityBuilt)) })
  const version = options.asnVersion ?? '2.3.2026112206'
  const asn = asnCsv()
  routes.set(`/cdn/@ip-location-db/asn@${version}/asn-ipv4-num.csv`, { body: asn.v4 })
  routes.set(`/cdn/@ip-location-db/asn@${version}/asn-ipv6-num.csv`, { body: asn.v6 })
  routes.set('/api/@ip-location-db/asn/resolved', { body: JSON.stringify({ type: 'npm', name: '@ip-location-db/asn', version }) })
  const hash = (s: string) => createHash('sha256').update(s).digest('base64')
  routes.set(`/api/@ip-location-db/asn@${version}`, {
    body: JSON.stringify({
      type: 'npm',
      name: '@ip-location-db/asn',
      version,
      default: null,
      files: [
        { name: '/asn-ipv4-num.csv', hash: hash(asn.v4), size: asn.v4.length },
        { name: '/asn-ipv6-num.csv', hash: hash(asn.v6), size: asn.v6.length },
      ],
    }),
  })

  return {
    url,
    requests,
    set: (path, route) => routes.set(path, route),
    sources: () => ({
      tor: `${url}/tor/torbulkexitlist`,
      vpn: `${url}/lists/`,
      datacenter: `${url}/lists/`,
      cloud: `${url}/lists/`,
      disposable: `${url}/disposable/`,
      'dbip-city': `${url}/dbip/dbip-city-lite-${options.month}.mmdb.gz`,
      asn: `${url}/cdn/@ip-location-db/asn@${version}/`,
    }),
    upstreams: () => ({
      disposableBase: `${url}/disposable/`,
      dbipCityPattern: `${url}/dbip/dbip-city-lite-{month}.mmdb.gz`,
      asnCdnPattern: `${url}/cdn/@ip-location-db/asn@{version}/`,
      jsdelivrApi: `${url}/api/`,
    }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
