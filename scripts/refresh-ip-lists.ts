/**
 * Downloads the open IP range lists from their upstream URLs (scripts/lib/ip-lists.ts) into a list directory and
 * rebuilds `data/ip/` from them with scripts/build-ip-data.ts. For users with internet access; nothing here runs in
 * the tests.
 *
 * Usage:
 *   npx tsx scripts/refresh-ip-lists.ts [--out DIR] [--data DIR] [--no-build] [--with-torproject] [--timeout MS]
 *     --out              where the lists go (default .cache/ip-lists; same layout as ../shared/fixtures/ip-lists)
 *     --data             where the compiled data goes (default data/ip)
 *     --no-build         only download
 *     --with-torproject  also fetch check.torproject.org/torbulkexitlist (current exits; see data/ip/SOURCES.md)
 *     --timeout          per-request timeout in ms (default 30000)
 *
 * Every file is fetched with a timeout and up to 3 tries, checked (a list must contain at least one network or
 * ASN), and written to a fresh directory that replaces the old one only when every required file arrived, so a
 * failed refresh never leaves a half-updated list directory. `manifest.json` records the date, URL, size and
 * SHA-256 of every file; the build uses its date as the MMDB build epoch.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseCidr } from '../src/sources/ip/parse.js'
import { buildIpData, writeIpData } from './build-ip-data.js'
import { IP_LISTS, LICENSE_FILES, readListLines } from './lib/ip-lists.js'

interface Fetched {
  path: string
  url: string
  bytes: number
  sha256: string
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

/** GET with a timeout and retries; resolves with the body, or null on a 404 (an optional list that does not exist). */
async function fetchText(url: string, timeoutMs: number, tries = 3): Promise<string | null> {
  let lastError: unknown
  for (let attempt = 1; attempt <= tries; attempt++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { 'user-agent': 'riskcheck-refresh-ip-lists' } })
      if (res.status === 404) return null
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
      return await res.text()
    } catch (e) {
      lastError = e
      if (attempt < tries) await new Promise((r) => setTimeout(r, 1000 * attempt))
    }
  }
  throw new Error(`${url}: ${(lastError as Error)?.message ?? String(lastError)}`)
}

/** True when a downloaded list has at least one usable line for its role. */
function looksUsable(text: string, kind: string): boolean {
  const lines = readListLines(text)
  if (kind === 'hosting-asns' || kind === 'vpn-asns') return lines.some((l) => /^AS\d+$/i.test(l))
  return lines.some((l) => parseCidr(l) !== null)
}

async function main(): Promise<void> {
  const out = resolve(arg('--out') ?? '.cache/ip-lists')
  const dataDir = resolve(arg('--data') ?? 'data/ip')
  const build = !process.argv.includes('--no-build')
  const withTor = process.argv.includes('--with-torproject')
  const timeoutMs = Number(arg('--timeout') ?? 30_000)
  const staging = `${out}.partial-${process.pid}`
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true })

  const wanted = IP_LISTS.filter((f) => !f.optIn || withTor)
  const jobs = [
    ...wanted.map((f) => ({ path: f.path, url: f.url, required: f.required, kind: f.role.kind as string })),
    ...LICENSE_FILES.map((f) => ({ path: f.path, url: f.url, required: false, kind: 'license' })),
  ]
  const fetched: Fetched[] = []
  const problems: string[] = []
  const queue = [...jobs]
  const worker = async () => {
    for (let job = queue.shift(); job; job = queue.shift()) {
      try {
        const text = await fetchText(job.url, timeoutMs)
        if (text === null) {
          if (job.required) problems.push(`${job.url}: 404`)
          continue
        }
        if (job.kind !== 'license' && !looksUsable(text, job.kind)) {
          if (job.required) problems.push(`${job.url}: no usable line`)
          continue
        }
        const target = join(staging, job.path)
        mkdirSync(dirname(target), { recursive: true })
        writeFileSync(target, text)
        fetched.push({ path: job.path, url: job.url, bytes: Buffer.byteLength(text), sha256: createHash('sha256').update(text).digest('hex') })
        console.log(`fetched ${job.path} (${Buffer.byteLength(text)} bytes)`)
      } catch (e) {
        if (job.required) problems.push((e as Error).message)
        else console.warn(`skipped optional ${job.path}: ${(e as Error).message}`)
      }
    }
  }
  await Promise.all([worker(), worker(), worker(), worker()])
  if (problems.length) {
    rmSync(staging, { recursive: true, force: true })
    console.error(`refresh-ip-lists: required lists failed, nothing changed:\n  ${problems.join('\n  ')}`)
    process.exit(1)
  }
  const fetchedAt = new Date().toISOString()
  fetched.sort((a, b) => a.path.localeCompare(b.path))
  writeFileSync(join(staging, 'manifest.json'), `${JSON.stringify({ fetchedAt, files: fetched }, null, 2)}\n`)
  if (existsSync(out)) rmSync(out, { recursive: true, force: true })
  mkdirSync(dirname(out), { recursive: true })
  renameSync(staging, out)
  console.log(`lists in ${out} (${fetched.length} files)`)

  if (build) {
    const result = buildIpData(out, Math.floor(Date.parse(fetchedAt) / 1000))
    writeIpData(dataDir, result, new Date(fetchedAt))
    console.log(`rebuilt ${dataDir}/flags.mmdb (${(result.mmdb.length / 1e6).toFixed(2)} MB) and asn-flags.json; update data/ip/SOURCES.md with the date`)
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
