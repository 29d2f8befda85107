/**
 * docs/deployment.md stays true: it lists every environment variable `riskcheck serve` and `riskcheck worker` read,
 * and every metric the server exports.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { serveEnvironment } from '../src/cli/serve-settings.js'
import { WORKER_VARIABLES } from '../src/cli/worker-command.js'
import { createServerMetrics } from '../src/server/metrics.js'

const doc = readFileSync(new URL('../docs/deployment.md', import.meta.url), 'utf8')

describe('docs/deployment.md', () => {
  it('names every environment variable of riskcheck serve', () => {
    const missing = serveEnvironment()
      .flatMap((e) => e.names)
      .filter((n) => !doc.includes(`\`${n}\``))
    expect(missing).toEqual([])
  })

  it('names every environment variable of riskcheck worker, its own in its section', () => {
    const names = WORKER_VARIABLES.flatMap((v) => v.names)
    expect(names).toContain('RISKCHECK_METRICS_PORT')
    expect(names.filter((n) => !doc.includes(`\`${n}\``))).toEqual([])
    const section = doc.split('\n## Workers\n')[1]!.split('\n## ')[0]!
    for (const n of ['RISKCHECK_METRICS_PORT', 'RISKCHECK_HOST', 'RISKCHECK_DATABASE_URL', 'RISKCHECK_REDIS_URL']) expect(section).toContain(`\`${n}\``)
  })

  it('names every riskcheck metric', async () => {
    const text = await createServerMetrics({ process: false }).text()
    const names = [...new Set([...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!))]
    expect(names.length).toBeGreaterThan(5)
    expect(names.filter((n) => !doc.includes(`\`${n}\``))).toEqual([])
  })
})
