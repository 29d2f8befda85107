/**
 * The real `riskcheck` process when the reader of its output goes away (`riskcheck ip < list | head -1`): it stops
 * quietly with 141, as `cat` or `grep` killed by SIGPIPE do. Before, the write's EPIPE was an unhandled 'error' event:
 * a stack trace on stderr and exit 1.
 */
import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { nodeArgs } from './child-process.js'

describe('riskcheck on a closed pipe', () => {
  it('stops quietly with exit 141 when stdout is closed after the first line', async () => {
    const child = spawn(process.execPath, [...nodeArgs('src/cli/bin.ts'), 'ip', '--offline', '--compact'], { stdio: ['pipe', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    // Far more output (about 1 KB a line) than a pipe holds, so the child is still writing when the pipe closes.
    child.stdin.on('error', () => undefined) // the child may be gone before it read all of this
    child.stdin.end('8.8.8.8\n'.repeat(5000))
    child.stdout.once('data', () => child.stdout.destroy())
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])))
    expect({ code, signal, err }).toEqual({ code: 141, signal: null, err: '' })
  }, 120_000)
})
