/**
 * The dashboard's outgoing mail: verification links, invitations and "webhook endpoint disabled" notices, sent
 * through the SMTP relay of `riskcheck serve --mail-url smtp://host:port` (RISKCHECK_MAIL_URL) with nodemailer.
 * `smtps://` uses TLS from the start; `smtp://` upgrades with STARTTLS when the relay offers it. The sender is
 * `?from=` of the URL (default `riskcheck@localhost`). Without a mail URL nothing is sent and the server logs
 * that a message was dropped (sign-up works, but only test keys can be made until the address is verified, e.g.
 * by an operator with `riskcheck admin user verify EMAIL`).
 */
import { nodemailer } from '../server/lazy-packages.js'

/** One message. */
export interface MailMessage {
  to: string
  subject: string
  text: string
}

/** Sends mail; resolves once the relay accepted the message. */
export interface Mailer {
  readonly configured: boolean
  send(message: MailMessage): Promise<void>
  close(): void
}

/** A mailer for `url` (`smtp://host:port`, `smtps://…`, optional `user:pass@`, `?from=addr`); none when undefined. */
export function createMailer(url: string | undefined, onDropped?: (m: MailMessage) => void): Mailer {
  if (!url) {
    return { configured: false, send: async (m) => onDropped?.(m), close: () => undefined }
  }
  const parsed = parseMailUrl(url)
  const transport = nodemailer().createTransport({
    host: parsed.host,
    port: parsed.port,
    secure: parsed.secure,
    ...(parsed.auth ? { auth: parsed.auth } : {}),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
  })
  return {
    configured: true,
    async send(m) {
      await transport.sendMail({ from: parsed.from, to: m.to, subject: m.subject, text: m.text })
    },
    close: () => transport.close(),
  }
}

/** Parses a mail URL; throws a TypeError that says what is wrong. */
export function parseMailUrl(url: string): { host: string; port: number; secure: boolean; from: string; auth?: { user: string; pass: string } } {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new TypeError(`mail URL must look like smtp://host:port (got ${JSON.stringify(url.slice(0, 80))})`)
  }
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new TypeError(`mail URL must start with smtp:// or smtps:// (got ${u.protocol}//)`)
  if (!u.hostname) throw new TypeError('mail URL needs a host: smtp://host:port')
  const secure = u.protocol === 'smtps:'
  const from = u.searchParams.get('from') ?? 'riskcheck@localhost'
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    from,
    ...(u.username ? { auth: { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } } : {}),
  }
}
