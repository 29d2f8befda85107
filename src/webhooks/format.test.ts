import { describe, expect, it } from 'vitest'
import type { BulkJob } from '../schema.js'
import {
  buildBulkCompletedEvent,
  buildCreditsAddedEvent,
  buildCreditsDepletedEvent,
  buildCreditsLowEvent,
  buildPingEvent,
} from './events.js'
import { buildFormattedBody, defaultFormatForUrl, escapeDiscordText, escapeSlackText, formatEventLine } from './format.js'

const now = new Date('2026-03-15T10:00:00Z')
const orgId = 'org_1'
const job: BulkJob = {
  id: 'bulk_1',
  name: 'March leads',
  type: 'email',
  status: 'completed',
  total_rows: 9812,
  unique_inputs: 9812,
  processed: 9812,
  credits_used: 9900,
  results: { approve: 9000, verify: 300, review: 200, block: 312, errors: 0, skipped: 0, cache_hits: 0 },
  created_at: '2026-03-15T09:00:00.000Z',
  completed_at: '2026-03-15T10:00:00.000Z',
  expires_at: '2026-03-22T09:00:00.000Z',
}

describe('formatEventLine', () => {
  it('writes one readable line per event type', () => {
    expect(formatEventLine(buildCreditsLowEvent({ orgId, now, balance: 240, thresholdPercent: 25, monthlyCredits: 10000 }))).toBe(
      'riskcheck: credits low — 240 of 10,000 monthly credits left (below 25 %)',
    )
    expect(formatEventLine(buildCreditsDepletedEvent({ orgId, now, balance: 0, monthlyCredits: 10000 }))).toBe(
      'riskcheck: credits depleted — 0 of 10,000 monthly credits left; live lookups are refused until credits arrive',
    )
    expect(formatEventLine(buildCreditsAddedEvent({ orgId, now, amount: 5000, balance: 5240, reason: 'top_up' }))).toBe(
      'riskcheck: 5,000 credits added (top-up) — balance 5,240',
    )
    expect(formatEventLine(buildBulkCompletedEvent({ orgId, now, job }))).toBe(
      "riskcheck: bulk job 'March leads' completed: 9,812 rows, 312 blocked, 9,900 credits",
    )
    expect(formatEventLine(buildPingEvent({ orgId, now, endpointId: 'we_9', message: 'hello' }))).toBe(
      'riskcheck: test ping for endpoint we_9 — hello',
    )
  })

  it('flattens and caps user text (a job name) to one line', () => {
    const e = buildBulkCompletedEvent({ orgId, now, job: { ...job, name: `a\nb\r\u2028c${'x'.repeat(500)}` } })
    const line = formatEventLine(e)
    expect(line).not.toMatch(/[\n\r\u2028]/)
    expect(line.length).toBeLessThan(320)
    expect(formatEventLine(buildBulkCompletedEvent({ orgId, now, job: { ...job, name: '' } }))).toContain("bulk job 'bulk_1'")
  })
})

describe('buildFormattedBody', () => {
  const low = buildCreditsLowEvent({ orgId, now, balance: 240, thresholdPercent: 25, monthlyCredits: 10000 })

  it('json is the event payload itself', () => {
    expect(JSON.parse(buildFormattedBody(low, 'json'))).toEqual(low)
  })

  it('slack is { text } and discord is { content } with mentions disabled', () => {
    expect(JSON.parse(buildFormattedBody(low, 'slack'))).toEqual({ text: formatEventLine(low) })
    expect(JSON.parse(buildFormattedBody(low, 'discord'))).toEqual({
      content: formatEventLine(low),
      allowed_mentions: { parse: [] },
    })
  })

  it('escapes injected chat markup from a job name', () => {
    const evil = buildBulkCompletedEvent({ orgId, now, job: { ...job, name: '<!channel> <https://evil.example|click> & **bold** @everyone' } })
    const slack = JSON.parse(buildFormattedBody(evil, 'slack')) as { text: string }
    expect(slack.text).toContain('&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp;')
    expect(slack.text).not.toContain('<!channel>')
    const discord = JSON.parse(buildFormattedBody(evil, 'discord')) as { content: string; allowed_mentions: unknown }
    expect(discord.content).toContain('\\*\\*bold\\*\\*')
    expect(discord.content).toContain('\\<https://evil.example\\|click\\>')
    expect(discord.allowed_mentions).toEqual({ parse: [] })
  })

  it('escape helpers', () => {
    expect(escapeSlackText('a<b>&c')).toBe('a&lt;b&gt;&amp;c')
    expect(escapeDiscordText('_x_ `y` ~z~ [l](u)')).toBe('\\_x\\_ \\`y\\` \\~z\\~ \\[l\\](u)')
  })
})

describe('defaultFormatForUrl', () => {
  it.each([
    ['https://hooks.slack.com/services/T000/B000/XXXX', 'slack'],
    ['https://hooks.slack.com./services/T000/B000/XXXX', 'slack'],
    ['https://HOOKS.SLACK.COM/services/T0/B0/X', 'slack'],
    ['https://hooks.slack.com/workflows/T0/A0/1/x', 'json'],
    ['https://hooks.slack.com.evil.example/services/x', 'json'],
    ['https://discord.com/api/webhooks/123/abc', 'discord'],
    ['https://discordapp.com/api/webhooks/123/abc', 'discord'],
    ['https://canary.discord.com/api/webhooks/123/abc', 'discord'],
    ['https://discord.com/api/v10/webhooks/123/abc', 'discord'],
    ['https://discord.com/channels/1/2', 'json'],
    ['http://hooks.slack.com/services/T0/B0/X', 'json'],
    ['https://example.com/hook', 'json'],
    ['not a url', 'json'],
  ])('%s → %s', (url, format) => {
    expect(defaultFormatForUrl(url)).toBe(format)
  })
})
