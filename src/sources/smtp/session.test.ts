import { Duplex, PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createSmtpSession, SessionError } from './session.js'

/** A client stream wired to a scripted server: `send` writes server text, `written` is what the client sent. */
function pair() {
  const toClient = new PassThrough()
  const toServer = new PassThrough()
  const stream = Duplex.from({ readable: toClient, writable: toServer })
  let written = ''
  toServer.setEncoding('utf8')
  toServer.on('data', (d: string) => (written += d))
  return {
    stream,
    send: (text: string) => toClient.write(text),
    hangUp: () => toClient.end(),
    written: () => written,
  }
}

const verbs: string[] = []
const onCommand = (v: string) => verbs.push(v)

describe('createSmtpSession over a PassThrough pair', () => {
  it('greets with EHLO and reads the extensions of a multi-line reply split across chunks', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream, { onCommand })
    p.send('220 mx.test ESMTP\r\n')
    const hello = s.greet('verify.example.org', 1_000)
    await new Promise((r) => setImmediate(r))
    expect(p.written()).toBe('EHLO verify.example.org\r\n')
    p.send('250-mx.test Hello\r\n250-PIPE')
    p.send('LINING\r\n250 SMTPUTF8\r\n')
    expect(await hello).toEqual({ ok: true })
    expect([...s.extensions]).toEqual(expect.arrayContaining(['PIPELINING', 'SMTPUTF8']))
    expect(s.dead).toBe(false)
  })

  it('falls back to HELO when EHLO is refused with 5xx', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    p.send('220 old.test\r\n502 5.5.1 EHLO not implemented\r\n250 old.test\r\n')
    expect(await s.greet('me.test', 1_000)).toEqual({ ok: true })
    expect(p.written()).toBe('EHLO me.test\r\nHELO me.test\r\n')
    expect(s.extensions.size).toBe(0)
  })

  it('a refusing banner is returned (with QUIT sent), not thrown', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    p.send('554 5.7.1 your IP is blocked\r\n')
    const hello = await s.greet('me.test', 1_000)
    expect(hello).toMatchObject({ ok: false, reply: { code: 554, enhancedCode: '5.7.1', text: 'your IP is blocked' } })
    expect(p.written()).toBe('QUIT\r\n')
    expect(s.dead).toBe(true)
  })

  it('replies that arrive together are queued and read in order', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    p.send('250 2.1.0 OK\r\n550 5.1.1 <x@y.test>: User unknown\r\n')
    await new Promise((r) => setImmediate(r))
    expect((await s.read(100)).code).toBe(250)
    expect(await s.read(100)).toEqual({ code: 550, enhancedCode: '5.1.1', text: '<x@y.test>: User unknown' })
  })

  it('no reply within the timeout: a SessionError of kind timeout, and the stream is closed', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    const err = await s.command('RCPT TO:<a@b.test>', 20).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SessionError)
    expect(err).toMatchObject({ kind: 'timeout', message: 'no reply within 20 ms' })
    await s.closed
    expect(s.dead).toBe(true)
  })

  it('the server hanging up fails the pending read (disconnect) and settles closed', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    const pending = s.read(1_000)
    p.hangUp()
    await expect(pending).rejects.toMatchObject({ kind: 'disconnect' })
    await s.closed
    await expect(s.read(1_000)).rejects.toBeInstanceOf(SessionError)
  })

  it('garbage is a protocol error', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    const pending = s.read(1_000)
    p.send('HTTP/1.1 400 Bad Request\r\n')
    await expect(pending).rejects.toMatchObject({ kind: 'protocol' })
  })

  it('a reply line longer than the cap is a protocol error (no unbounded buffering)', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    const pending = s.read(1_000)
    p.send(`250 ${'x'.repeat(5_000)}`)
    await expect(pending).rejects.toMatchObject({ kind: 'protocol', message: 'reply line too long' })
  })

  it('421 marks the session dead but is still read as a reply', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    p.send('421 4.7.0 mx.test Error: too many errors\r\n')
    expect(await s.read(100)).toMatchObject({ code: 421, enhancedCode: '4.7.0' })
    expect(s.dead).toBe(true)
  })

  it('destroy() fails a pending read at once with kind aborted', async () => {
    const p = pair()
    const s = createSmtpSession(p.stream)
    const pending = s.read(60_000)
    s.destroy('time budget used up')
    await expect(pending).rejects.toMatchObject({ kind: 'aborted', message: 'time budget used up' })
    await s.closed
  })

  it('quit() says QUIT, ends the stream, and counts commands', async () => {
    verbs.length = 0
    const p = pair()
    const s = createSmtpSession(p.stream, { onCommand, quitGraceMs: 10 })
    p.send('250 OK\r\n')
    await s.command('RSET', 100)
    s.quit()
    expect(p.written()).toBe('RSET\r\nQUIT\r\n')
    expect(verbs).toEqual(['RSET', 'QUIT'])
    await s.closed
    expect(s.dead).toBe(true)
  })
})
