import { Duplex, PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createCatchAllMemo } from './catch-all.js'
import { checkMailbox, type MailboxDeps } from './mailbox.js'
import { createSmtpSession, type SmtpSession } from './session.js'

/** A session whose server answers each command line with `reply(line)` (null: no answer). */
function scripted(reply: (line: string) => string | null): { session: SmtpSession; lines: string[] } {
  const toClient = new PassThrough()
  const toServer = new PassThrough()
  const lines: string[] = []
  toServer.setEncoding('utf8')
  toServer.on('data', (chunk: string) => {
    for (const line of chunk.split('\r\n').filter(Boolean)) {
      lines.push(line)
      const r = reply(line)
      if (r !== null) toClient.write(`${r}\r\n`)
    }
  })
  return { session: createSmtpSession(Duplex.from({ readable: toClient, writable: toServer })), lines }
}

function deps(): MailboxDeps {
  return { mailFrom: 'verify@me.test', replyTimeoutMs: 200, catchAll: createCatchAllMemo({ ttlMs: 60_000, now: () => 0 }), randomLocalPart: () => 'zz9random' }
}

const req = (address: string) => ({ address, domain: address.split('@')[1]!, utf8: false, mxHost: 'mx.corp.test' })

describe('checkMailbox on a scripted session', () => {
  it('MAIL, RCPT, then the catch-all probe; RSET before the next address; rejections counted', async () => {
    const { session, lines } = scripted((l) => (l.startsWith('RCPT TO:<jane@') ? '250 2.1.5 OK' : l.startsWith('RCPT') ? '550 5.1.1 User unknown' : '250 OK'))
    const d = deps()
    expect(await checkMailbox(session, req('jane@corp.test'), d)).toMatchObject({ kind: 'answer', result: { smtp_check: 'deliverable', catchAll: false } })
    expect(await checkMailbox(session, req('ghost@corp.test'), d)).toMatchObject({ kind: 'answer', result: { smtp_check: 'undeliverable', code: 550 } })
    expect(lines).toEqual([
      'MAIL FROM:<verify@me.test>',
      'RCPT TO:<jane@corp.test>',
      'RCPT TO:<zz9random@corp.test>',
      'RSET',
      'MAIL FROM:<verify@me.test>',
      'RCPT TO:<ghost@corp.test>',
    ])
    expect({ transactions: session.transactions, recipients: session.recipients, rejections: session.rejections }).toEqual({ transactions: 2, recipients: 3, rejections: 2 })
  })

  it('a 421 at MAIL or RCPT is reported as closing (the caller retries on a new connection)', async () => {
    const atRcpt = scripted((l) => (l.startsWith('RCPT') ? '421 4.7.0 Error: too many errors' : '250 OK'))
    expect(await checkMailbox(atRcpt.session, req('jane@corp.test'), deps())).toMatchObject({ kind: 'closing', reply: { code: 421 } })
    expect(atRcpt.session.dead).toBe(true)
    const atMail = scripted(() => '421 4.3.2 shutting down')
    expect(await checkMailbox(atMail.session, req('jane@corp.test'), deps())).toMatchObject({ kind: 'closing' })
  })

  it('a refused MAIL FROM is an unknown answer with its code', async () => {
    const { session } = scripted(() => '553 5.7.1 sender rejected')
    expect(await checkMailbox(session, req('jane@corp.test'), deps())).toMatchObject({ kind: 'answer', result: { smtp_check: 'unknown', code: 553 } })
  })

  it('a probe that gets no reply: the address stays deliverable (catch-all unknown) and the session is marked dead', async () => {
    const { session } = scripted((l) => (l.includes('zz9random') ? null : '250 OK'))
    const a = await checkMailbox(session, req('jane@corp.test'), deps())
    expect(a).toMatchObject({ kind: 'answer', result: { smtp_check: 'deliverable', catchAll: null } })
    expect(session.dead).toBe(true)
  })

  it('no reply to RCPT throws the SessionError for the caller', async () => {
    const { session } = scripted((l) => (l.startsWith('RCPT') ? null : '250 OK'))
    await expect(checkMailbox(session, req('jane@corp.test'), deps())).rejects.toMatchObject({ kind: 'timeout' })
  })
})
