import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { DATA_SOURCE_NAMES } from './catalog.js'
import { parseManifest } from './manifest.js'

const file = { path: 'lists/torproject/torbulkexitlist', bytes: 10, sha256: 'a'.repeat(64) }
function manifest(over: Record<string, unknown> = {}): Record<string, unknown> {
  const sources: Record<string, unknown> = {}
  for (const n of DATA_SOURCE_NAMES)
    sources[n] = { origin: 'bundled', upstream: null, version: 'v1', data_date: '2026-11-23T00:00:00Z', fetched_at: null, entries: 0, checksum: 'none', files: [] }
  sources.tor = { origin: 'fetched', upstream: 'https://x', version: '2026-11-23T06:12Z', data_date: '2026-11-23T06:12:00Z', fetched_at: '2026-11-23T06:12:00Z', entries: 3, checksum: 'none', files: [file] }
  return { format: 1, id: '20261123T061200Z-abcdef', created_at: '2026-11-23T06:12:00Z', riskcheck: '0.1.0', sources, built: [], ...over }
}

describe('parseManifest', () => {
  it('accepts a well-formed manifest', () => {
    const m = parseManifest(manifest())
    expect(m.sources.tor.files).toEqual([file])
    expect(m.sources.asn.origin).toBe('bundled')
  })

  it.each([
    ['a path leaving the set', { path: '../../etc/passwd', bytes: 1, sha256: 'a'.repeat(64) }],
    ['an absolute path', { path: '/etc/passwd', bytes: 1, sha256: 'a'.repeat(64) }],
    ['a bad hash', { path: 'x', bytes: 1, sha256: 'nothex' }],
    ['a negative size', { path: 'x', bytes: -1, sha256: 'a'.repeat(64) }],
  ])('refuses %s', (_what, bad) => {
    const m = manifest()
    ;(m.sources as { tor: { files: unknown[] } }).tor.files = [bad]
    expect(() => parseManifest(m)).toThrow(/manifest: source tor file 0/)
  })

  it('refuses a missing source, an unknown format and a bad origin', () => {
    const noTor = manifest()
    delete (noTor.sources as Record<string, unknown>).tor
    expect(() => parseManifest(noTor)).toThrow('manifest: source tor missing')
    expect(() => parseManifest(manifest({ format: 2 }))).toThrow('manifest: unknown format 2')
    const bad = manifest()
    ;(bad.sources as { vpn: { origin: string } }).vpn.origin = "magic"
    expect(() => parseManifest(bad)).toThrow('manifest: source vpn: bad origin')
  })

  it('throws only Errors with a message for any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        try {
          parseManifest(v)
        } catch (e) {
          expect(e).toBeInstanceOf(Error)
          expect((e as Error).message).toMatch(/^manifest: /)
        }
      }),
    )
  })
})
