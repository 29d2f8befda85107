/**
 * Delivery formats: `json` (the signed event payload as is), `slack` (`{ "text": … }`) and `discord`
 * (`{ "content": …, "allowed_mentions": { "parse": [] } }`) — one readable line per event for chat incoming webhooks.
 *
 * Chat lines are built from event data that may carry user text (a bulk job name): it is flattened to one line,
 * capped, and escaped for the target (Slack's `&`, `<`, `>` so `<!channel>` or links cannot be injected; Discord
 * mentions are disabled with `allowed_mentions`, and markdown characters are escaped).
 */
import type { EventPayload } from '../schema.js'

/** How an endpoint's deliveries are shaped. */
export type WebhookFormat = 'json' | 'slack' | 'discord'

/** The formats, for validation. */
export const WEBHOOK_FORMATS: readonly WebhookFormat[] = ['json', 'slack', 'discord']

/** Longest user-supplied text (e.g. a job name) quoted in a chat line. */
const MAX_QUOTED = 200

const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 })

function num(v: unknown): string {
  return typeof v === 'number' && Number.isFinite(v) ? nf.format(v) : '?'
}

/** One line of at most MAX_QUOTED characters: control characters and line breaks become spaces. */
function oneLine(v: unknown): string {
  const s = typeof v === 'string' ? v : ''
  let out = ''
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0
    out += c < 0x20 || c === 0x7f || c === 0x2028 || c === 0x2029 ? ' ' : ch
    if (out.length >= MAX_QUOTED) {
      out = `${out.slice(0, MAX_QUOTED - 1)}…`
      break
    }
  }
  return out.trim()
}

const REASONS: Record<string, string> = { period_renewal: 'new period', upgrade: 'upgrade', top_up: 'top-up' }

/**
 * The readable one-line summary of an event (plain text, not yet escaped for a chat target).
 *
 * @example
 * formatEventLine(lowEvent)  // "riskcheck: credits low — 240 of 10,000 monthly credits left (below 25 %)"
 * formatEventLine(bulkEvent) // "riskcheck: bulk job 'March leads' completed: 9,812 rows, 312 blocked, 9,900 credits"
 */
export function formatEventLine(event: EventPayload): string {
  const line = eventLine(event)
  // a test key's activity is marked where a person reads it
  return event.test_mode === true ? line.replace(/^riskcheck:/, 'riskcheck (test mode):') : line
}

function eventLine(event: EventPayload): string {
  const d = event.data
  switch (event.type) {
    case 'credits.low':
      return `riskcheck: credits low — ${num(d.balance)} of ${num(d.monthly_credits)} monthly credits left (below ${num(d.threshold_percent)} %)`
    case 'credits.depleted':
      return `riskcheck: credits depleted — ${num(d.balance)} of ${num(d.monthly_credits)} monthly credits left; live lookups are refused until credits arrive`
    case 'credits.added':
      return `riskcheck: ${num(d.amount)} credits added (${REASONS[String(d.reason)] ?? oneLine(d.reason)}) — balance ${num(d.balance)}`
    case 'bulk.completed': {
      const name = oneLine(d.name) || oneLine(d.id)
      const results = (d.results ?? {}) as Record<string, unknown>
      const status = typeof d.status === 'string' ? oneLine(d.status) : 'completed'
      return `riskcheck: bulk job '${name}' ${status}: ${num(d.total_rows)} rows, ${num(results.block)} blocked, ${num(d.credits_used)} credits`
    }
    case 'review.decided':
      return `riskcheck: review ${oneLine(d.review_id)} decided: ${oneLine(d.decision)} (${oneLine(d.type)} request ${oneLine(d.request_id)}, by ${oneLine(d.decided_by)})`
    case 'email.rechecked': {
      const where = typeof d.bulk_job_id === 'string' ? `bulk job ${oneLine(d.bulk_job_id)} row ${num(d.row_index)}` : `request ${oneLine(d.request_id)}`
      return `riskcheck: ${oneLine(d.email)} rechecked (${where}): ${oneLine(d.verdict)}, ${oneLine(d.action)} after ${num(d.attempts)} attempt(s)`
    }
    case 'ping':
      return `riskcheck: test ping for endpoint ${oneLine(d.endpoint_id)} — ${oneLine(d.message)}`
    default:
      return `riskcheck: ${oneLine(String((event as { type: unknown }).type))} event ${oneLine(event.id)}`
  }
}

/** Escapes text for Slack's mrkdwn `text` (the three characters Slack requires escaped). */
export function escapeSlackText(s: string): string {
  let out = ''
  for (const ch of s) out += ch === '&' ? '&amp;' : ch === '<' ? '&lt;' : ch === '>' ? '&gt;' : ch
  return out
}

const DISCORD_SPECIAL = '\\*_~`|[]<>'

/**
 * Escapes Discord's inline markdown (bold/italic/strike/code/spoiler, masked links, `<…>` mentions and timestamps);
 * mentions are also disabled with `allowed_mentions`. Line-start syntax (`#`, `-`, `>`) cannot occur: lines start
 * with `riskcheck:`.
 */
export function escapeDiscordText(s: string): string {
  let out = ''
  for (const ch of s) out += DISCORD_SPECIAL.includes(ch) ? `\\${ch}` : ch
  return out
}

/**
 * The request body of a delivery in the given format (a string, signed as is).
 * - `json`: `JSON.stringify(event)`
 * - `slack`: `{"text":"<line>"}`
 * - `discord`: `{"content":"<line>","allowed_mentions":{"parse":[]}}` (Discord caps content at 2,000 characters; a
 *   line stays far below that)
 *
 * @example buildFormattedBody(event, 'slack') // '{"text":"riskcheck: credits low — …"}'
 */
export function buildFormattedBody(event: EventPayload, format: WebhookFormat): string {
  switch (format) {
    case 'slack':
      return JSON.stringify({ text: escapeSlackText(formatEventLine(event)) })
    case 'discord':
      return JSON.stringify({ content: escapeDiscordText(formatEventLine(event)).slice(0, 2000), allowed_mentions: { parse: [] } })
    default:
      return JSON.stringify(event)
  }
}

/**
 * The default format for an endpoint URL: `slack` for Slack incoming webhooks (`https://hooks.slack.com/services/…`),
 * `discord` for Discord webhooks (`https://discord.com/api/webhooks/…`, also `discordapp.com`, `ptb.`/`canary.`
 * subdomains), `json` otherwise (including unparsable input). Only the host and path prefix are looked at.
 *
 * @example
 * defaultFormatForUrl('https://hooks.slack.com/services/T0/B0/XYZ') // 'slack'
 * defaultFormatForUrl('https://discord.com/api/webhooks/1/abc')     // 'discord'
 * defaultFormatForUrl('https://example.com/hook')                   // 'json'
 */
export function defaultFormatForUrl(url: string | URL): WebhookFormat {
  let u: URL
  try {
    u = url instanceof URL ? url : new URL(String(url).slice(0, 4096))
  } catch {
    return 'json'
  }
  if (u.protocol !== 'https:') return 'json'
  const host = u.hostname.endsWith('.') ? u.hostname.slice(0, -1) : u.hostname
  const path = u.pathname
  if (host === 'hooks.slack.com' && path.startsWith('/services/')) return 'slack'
  const discordHosts = ['discord.com', 'discordapp.com', 'ptb.discord.com', 'canary.discord.com']
  if (discordHosts.includes(host) && (path.startsWith('/api/webhooks/') || /^\/api\/v\d{1,2}\/webhooks\//.test(path))) {
    return 'discord'
  }
  return 'json'
}
