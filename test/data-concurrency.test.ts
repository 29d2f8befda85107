/**
 * Concurrent `riskcheck data update` runs on one data directory, each in its own process (as cron jobs and a server's
 * scheduled refresh would run): the cross-process lock lets one update at a time; the others fail with exit code 75
 * or, with --wait, run one after another. The directory stays valid either way.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findSetFileProblem, listSets, readPointer, readSetManifest } from '../src/data/store.js'
import { createRiskcheck } from '../src/index.js'
import { startDataUpstream, torList, type DataUpstream } from './fake-internet/data-upstream.js'
import { nodeArgs } from './child-process.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const NEW_EXIT = '81.2.69.160'
let upstream: DataUpstream
let base: string

beforeAll(async () => {
  upstream = await startDataUpstream({ month: '2026-11', torExtra: [NEW_EXIT] })
  // each download takes a while, so the runs overlap while one holds the lock
  upstream.set('/tor/torbulkexitlist', { body: torList([NEW_EXIT]), delayMs: 1500 })
  base = mkdtempSync(join(tmpdir(), 'riskcheck-data-conc-'))
})
afterAll(async () => {
  await upstream.close()
  rmSync(base, { recursive: true, force: true })
})

/** Runs the CLI in a child process; resolves with its exit code and output. */
function runUpdateProcess(dir: string, extra: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [...nodeArgs('src/cli/bin.ts'), 'data', 'update', '--data-dir', dir, '--only', 'tor', '--source', `tor=${upstream.sources().tor}`, '--json', ...extra],
      { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' } },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

function expectValidDirectory(dir: string): void {
  const id = readPointer(dir)
  expect(id).not.toBeNull()
  for (const s of listSets(dir)) expect(findSetFileProblem(dir, readSetManifest(dir, s)), s).toBeNull()
  expect(existsSync(join(dir, 'staging')) ? readdirSync(join(dir, 'staging')) : []).toEqual([])
  expect(existsSync(join(dir, 'update.lock'))).toBe(false)
}

describe('concurrent updates of one data directory', () => {
  it('one runs, the others exit 75 naming the lock; the directory stays valid and answers', async () => {
    const dir = join(base, 'no-wait')
    const runs = await Promise.all([runUpdateProcess(dir), runUpdateProcess(dir), runUpdateProcess(dir)])
    const codes = runs.map((r) => r.code).sort()
    expect(codes.every((c) => c === 0 || c === 75), JSON.stringify(runs.map((r) => [r.code, r.stderr]))).toBe(true)
    expect(codes.filter((c) => c === 0).length).toBeGreaterThanOrEqual(1)
    for (const r of runs.filter((x) => x.code === 75)) expect(r.stderr).toMatch(/another "riskcheck data update" is running/)
    const installed = runs.filter((r) => r.code === 0).map((r) => JSON.parse(r.stdout).installed as string)
    expectValidDirectory(dir)
    expect(installed).toContain(readPointer(dir))
    const rc = createRiskcheck({ offline: true, dataDir: dir })
    expect((await rc.ip(NEW_EXIT)).details.flags.is_tor).toBe(true)
    await rc.close()
  }, 120_000)

  it('with --wait they run one after another, each installing a complete set', async () => {
    const dir = join(base, 'wait')
    const runs = await Promise.all([runUpdateProcess(dir, ['--wait', '120']), runUpdateProcess(dir, ['--wait', '120']), runUpdateProcess(dir, ['--wait', '120'])])
    expect(runs.map((r) => r.code), runs.map((r) => r.stderr).join('\n')).toEqual([0, 0, 0])
    const results = runs.map((r) => JSON.parse(r.stdout) as { installed: string; previous: string | null })
    const ids = results.map((r) => r.installed).sort()
    expect(new Set(ids).size).toBe(3)
    // serialized: every run started from the set the one before installed
    expect(results.map((r) => r.previous).sort()).toEqual([null, ids[0], ids[1]].sort())
    expectValidDirectory(dir)
    expect(readPointer(dir)).toBe(ids[2])
    expect(listSets(dir)).toEqual(ids)
  }, 120_000)
})
