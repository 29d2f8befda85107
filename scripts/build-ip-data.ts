/**
 * Rebuilds the bundled flag data of the IP lookup (`data/ip/flags.mmdb`, `data/ip/asn-flags.json`) from the list
 * snapshot in `data/ip/lists/` with the package's own builder (src/data/build-ip-flags.ts — the same code
 * `riskcheck data update` runs).
 *
 * Usage:
 *   npx tsx scripts/build-ip-data.ts [--from DIR] [--out DIR] [--epoch YYYY-MM-DD]
 *     --from   list directory in the layout of data/ip/lists (default data/ip/lists)
 *     --out    output directory (default data/ip)
 *     --epoch  build date written into the MMDB metadata (default: today); the committed build uses the date of
 *              the list snapshot (see data/ip/SOURCES.md)
 *
 * Tor exits: `torproject/torbulkexitlist` when the directory has it, else the bundled SecOps snapshot.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Reader } from 'maxmind'
import { buildIpFlags, listInputsIn, writeIpFlags } from '../src/data/build-ip-flags.js'
import { BUNDLED_TOR_LIST, listFilesOf } from '../src/data/ip-lists.js'

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

function main(): void {
  const from = resolve(arg('--from') ?? 'data/ip/lists')
  const out = resolve(arg('--out') ?? 'data/ip')
  const epochText = arg('--epoch')
  const epochMs = epochText ? Date.parse(epochText) : Date.now()
  if (!Number.isFinite(epochMs)) throw new Error(`build-ip-data: bad --epoch ${epochText}`)
  if (!existsSync(from)) {
    console.error(`build-ip-data: list directory not found: ${from}`)
    process.exit(1)
  }
  const tor = listFilesOf('tor').filter((f) => existsSync(join(from, f.path)))
  const files = [...listFilesOf('datacenter'), ...listFilesOf('cloud'), ...listFilesOf('vpn'), ...(tor.length ? tor : [BUNDLED_TOR_LIST])]
  const t0 = performance.now()
  const result = buildIpFlags(listInputsIn(from, files), Math.floor(epochMs / 1000))
  writeIpFlags(out, result, new Date(epochMs))
  for (const s of result.stats) console.log(`${String(s.networks).padStart(7)}  ${s.file}${s.skipped ? `  (${s.skipped} lines skipped)` : ''}`)
  if (result.missing.length) console.log(`optional lists not present: ${result.missing.join(', ')}`)
  const meta = new Reader(result.mmdb).metadata
  console.log(
    `wrote ${join(out, 'flags.mmdb')}: ${(result.mmdb.length / 1e6).toFixed(2)} MB, ${meta.nodeCount} nodes, ${meta.recordSize}-bit records; ` +
      `asn-flags.json: ${result.asnFlags.hosting.length} hosting ASNs, ${Object.keys(result.asnFlags.vpn).length} VPN ASNs (${(performance.now() - t0).toFixed(0)} ms)`,
  )
}

main()
