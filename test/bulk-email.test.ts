/**
 * Bulk email jobs against the loopback DNS and SMTP servers: grouped by domain, each domain's DNS records are asked
 * once, SMTP sessions are reused (at most the per-host limit of connections per domain), output stays in input order;
 * `smtp: false` opens no SMTP connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBulkEngine } from '../src/bulk/index.js'
import type { BulkEngine } from '../src/bulk/types.js'
import { BULK_DETAILS_SCHEMAS, BulkResultRowSchema, type BulkResultRow, type EmailDetails } from '../src/schema.js'
import type { Zones } from './fake-internet/dns-server.js'
import { startMailWorld, type MailWorld } from './fake-internet/mail-world.js'
import { schemaErrors } from './validate.js'

const DOMAINS = ['alpha-corp.com', 'beta-corp.com', 'gamma-corp.com']
const zones: Zones = {}
for (const d of DOMAINS) {
  zones[d] = { MX: [{ priority: 10, exchange: `mx.${d}` }], TXT: ['v=spf1 mx -all'] }
  zones[`mx.${d}`] = { A: ['127.0.0.1'] }
  zones[`_dmarc.${d}`] = { TXT: ['v=DMARC1; p=reject'] }
}

let world: MailWorld
let bulk: BulkEngine

beforeAll(async () => {
  world = await startMailWorld({
    zones,
    smtpServer: { onRcpt: (a) => (/^user\d+@/i.test(a) ? 'accept' : 'reject') },
    riskcheck: { smtp: { timeoutMs: 2000 }, rdap: { enabled: false } },
  })
  bulk = createBulkEngine(world.env, { concurrency: 8 })
})
afterAll(async () => {
  await bulk.close()
  await world.close()
})

async function rowsOf(id: string): Promise<BulkResultRow[]> {
  const out: BulkResultRow[] = []
  let cursor: string | null = null
  do {
    const page = await bulk.results(id, { cursor, limit: 25 })
    out.push(...page.data)
    cursor = page.next_cursor
  } while (cursor)
  return out
}

describe('bulk email over loopback DNS and SMTP', () => {
  it('asks each domain’s DNS once, reuses SMTP sessions within the per-host limit, keeps input order', async () => {
    const inputs: string[] = []
    for (let i = 0; i < 60; i++) inputs.push(`${i % 10 === 9 ? 'nobody' : 'user'}${i}@${DOMAINS[i % 3]}`)
    inputs.push(' user0@ALPHA-Corp.com', '', 'not-an-email')
    const q0 = world.dnsServer.queries.length
    const c0 = world.smtpServer.connections
    const job = await bulk.create({ type: 'email', inputs })
    expect(job.unique_inputs).toBe(61) // the repeat (domain case, spaces) and the blank are folded
    const done = await bulk.waitFor(job.id)
    expect(done.status).toBe('completed')

    const rows = await rowsOf(job.id)
    expect(rows.map((r) => r.input)).toEqual([...inputs.slice(0, 60), 'not-an-email'])
    for (const r of rows) {
      expect(schemaErrors(BulkResultRowSchema, r)).toEqual([])
      expect(schemaErrors(BULK_DETAILS_SCHEMAS.email, r.details)).toEqual([]) // bulk rows carry lists, not velocity
    }
    const smtp = (r: BulkResultRow) => (r.details as EmailDetails).smtp_check
    expect(rows.filter((r) => r.input.startsWith('user')).every((r) => smtp(r) === 'deliverable' && r.action === 'approve')).toBe(true)
    expect(rows.filter((r) => r.input.startsWith('nobody')).every((r) => smtp(r) === 'undeliverable' && r.action === 'block')).toBe(true)
    expect(rows.at(-1)).toMatchObject({ status: 'invalid', action: 'block' })
    expect(done.results.block).toBe(7) // 6 unknown mailboxes + the malformed address

    const queries = world.dnsServer.queries.slice(q0)
    for (const d of DOMAINS) {
      expect(queries.filter((q) => q.name.toLowerCase() === d && q.type === 'MX')).toHaveLength(1)
      expect(queries.filter((q) => q.name.toLowerCase() === `_dmarc.${d}`)).toHaveLength(1)
    }
    // at most maxConnectionsPerHost (2) sessions per domain, each serving many recipients
    const opened = world.smtpServer.connections - c0
    expect(opened).toBeGreaterThanOrEqual(3)
    expect(opened).toBeLessThanOrEqual(6)
    expect(world.ctx.sources.smtp.stats().sessionsReused).toBeGreaterThanOrEqual(60 - 6)
  })

  it('smtp: false skips the mailbox check and opens no SMTP connection', async () => {
    const c0 = world.smtpServer.connections
    const job = await bulk.create({ type: 'email', inputs: ['user1@alpha-corp.com', 'nobody@beta-corp.com'], smtp: false })
    await bulk.waitFor(job.id)
    const rows = await rowsOf(job.id)
    expect(rows.map((r) => (r.details as EmailDetails).smtp_check)).toEqual(['skipped', 'skipped'])
    expect(world.smtpServer.connections).toBe(c0)
  })

  it('folds addresses that differ only in case into one row and one charge (the whole address lower-cased)', async () => {
    const { createMemoryLedger } = await import('../src/credits.js')
    const ledger = createMemoryLedger(10)
    const billed = createBulkEngine({ ...world.env, ledger }, { concurrency: 4 })
    try {
      const r0 = world.smtpServer.rcptCount
      const inputs = ['User7@Alpha-Corp.com', 'user7@alpha-corp.com', 'USER7@alpha-corp.com', ' user7@ALPHA-CORP.COM ']
      const job = await billed.create({ type: 'email', inputs })
      expect(job).toMatchObject({ total_rows: 4, unique_inputs: 1 })
      expect(job.results.skipped).toBe(3)
      const done = await billed.waitFor(job.id)
      expect(done.credits_used).toBe(1)
      expect(ledger.balance()).toBe(9)
      const rows = (await billed.results(job.id)).data
      expect(rows.map((r) => [r.input, r.credits_used, (r.details as EmailDetails).smtp_check])).toEqual([['User7@Alpha-Corp.com', 1, 'deliverable']])
      expect(world.smtpServer.rcptCount - r0).toBeLessThanOrEqual(2) // the address (and at most one catch-all probe)
    } finally {
      await billed.close()
    }
  })
})
