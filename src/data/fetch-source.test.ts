import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { isSingleListFile } from './fetch-source.js'

describe('isSingleListFile (a --source location: one list file, or a directory of the upstream layout)', () => {
  it('a URL names a list file by the extension of its path, whatever its query or fragment', () => {
    expect(isSingleListFile('https://mirror.internal/lists/disposable.json')).toBe(true)
    expect(isSingleListFile('https://mirror.internal/lists/domains.TXT?token=abc&v=2')).toBe(true)
    expect(isSingleListFile('https://mirror.internal/x/blocklist.conf#top')).toBe(true)
    expect(isSingleListFile('http://mirror.internal/x/list.lst')).toBe(true)
    expect(isSingleListFile('https://mirror.internal/ivolo/disposable-email-domains/master/')).toBe(false)
    expect(isSingleListFile('https://mirror.internal/base?file=index.json')).toBe(false)
    expect(isSingleListFile(`https://mirror.internal/${'a.lst?'.repeat(20_000)}`)).toBe(true)
    expect(isSingleListFile(`https://mirror.internal/${'a.lst/'.repeat(20_000)}`)).toBe(false)
  })

  it('a local path is a list file when it is a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'riskcheck-fetch-source-'))
    try {
      writeFileSync(join(dir, 'domains'), 'mailinator.com\n')
      expect(isSingleListFile(join(dir, 'domains'))).toBe(true)
      expect(isSingleListFile(dir)).toBe(false)
      expect(isSingleListFile(join(dir, 'missing.json'))).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
