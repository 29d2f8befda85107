/**
 * Pasted or uploaded CSV on the Bulk jobs and Lists pages is read as RFC 4180 (parseInputs): a line break inside a
 * quoted field of another column stays in that field, so it never becomes an input of a job (billed) or a value
 * added to a list; a quote never closed, or a value longer than a CSV field may be, is refused, nothing started or
 * added, the text kept in the box.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { escapeHtml } from '../../src/dashboard/html.js'
import { parseInputs } from '../../src/dashboard/pages/bulk.js'
import { start, type Running } from './engines.js'
import { Client, pageText } from './http.js'

describe('parseInputs', () => {
  it('takes the first field of each CSV record: quotes, "", line breaks in fields, CRLF, a BOM, a header', () => {
    expect(parseInputs('domain,note\nfraud-ring.io,"called back,\ngood-customer.com\nsaid fine"\nother.io,x\n')).toEqual(['fraud-ring.io', 'other.io'])
    expect(parseInputs('\uFEFFemail,name\r\n"a@x.test","Doe, ""JD"" Jane"\r\nb@x.test,"two\r\nlines"\r\n')).toEqual(['a@x.test', 'b@x.test'])
    expect(parseInputs('email\n"a@x.test",1\nb@x.test, 2\n\n  c@x.test  ')).toEqual(['a@x.test', 'b@x.test', 'c@x.test'])
  })

  it('skips a header naming any list item type or bulk type (country, asn, email_domain …)', () => {
    for (const h of ['country', 'ASN', 'email_domain', 'values', 'ip', 'phone_type']) expect(parseInputs(`${h}\nFR\n`)).toEqual(['FR'])
  })

  it('refuses a quote never closed (the rest of the text would be one input)', () => {
    expect(() => parseInputs('a@x.test\n"b@x.test\nc@x.test\n')).toThrow(/never closed \(the one starting "b@x\.test"\)/)
  })

  it('refuses a value longer than 65,536 characters (a stray quote swallowing lines) instead of cutting it', () => {
    const text = `email,note\na@x.test,ok\nb@x.test,"oops\n${'c@x.test,x\n'.repeat(7000)}end"\nd@x.test,fine\n`
    expect(() => parseInputs(text)).toThrow('A value is longer than 65,536 characters (record 3, from line 3, starting "oops")')
  })
})

describe('the pages read pasted CSV as CSV', () => {
  let r: Running
  let c: Client
  let team = ''
  beforeAll(async () => {
    r = await start('sqlite')
    c = new Client(r.base)
    team = await c.signUp('owner@example.test', 'Importers')
  }, 60_000)
  afterAll(async () => r?.close())

  it('adds to a list only the first column, never a line of a quoted note; an unclosed quote adds nothing', async () => {
    await c.get(`${team}/lists/live`)
    const made = await c.post(`${team}/lists/live`, { name: 'Fraud domains', kind: 'block', item_type: 'email_domain' })
    const at = made.header('location')!.split('?')[0]!
    await c.get(at)
    const added = await c.post(`${at}/items`, { values: 'domain,note\r\nfraud-ring.io,"called back,\r\ngood-customer.com\r\nsaid fine"\r\n' })
    expect(pageText(added.body)).toContain('1 added, 0 already on the list.')
    expect((await c.get(`${at}?q=good-customer.com`)).body).not.toContain('data-item="good-customer.com"')
    const refused = await c.post(`${at}/items`, { values: 'a.io\n"b.io\nc.io\n' })
    expect(refused.status).toBe(400)
    expect(pageText(refused.body)).toContain('A quoted value is never closed')
    expect(refused.body).toContain('&quot;b.io\nc.io')
    expect(pageText((await c.get(at)).body)).toContain('1 items')
  })

  it('refuses an over-long value on the Lists and Bulk jobs pages: nothing added or started, the text kept in the box', async () => {
    const text = `domain,note\nfine.io,ok\nlong.io,"oops\n${'swallowed.io,x\n'.repeat(6000)}end"\n`
    const made = await c.post(`${team}/lists/live`, { name: 'Over-long', kind: 'block', item_type: 'email_domain' })
    const at = made.header('location')!.split('?')[0]!
    await c.get(at)
    const refused = await c.post(`${at}/items`, { values: text })
    expect(refused.status).toBe(400)
    expect(pageText(refused.body)).toContain('A value is longer than 65,536 characters (record 3, from line 3, starting "oops")')
    expect(refused.body).toContain(`>${escapeHtml(text)}</textarea>`)
    expect(pageText((await c.get(at)).body)).toContain('0 items')
    await c.get(`${team}/bulk`)
    const before = JSON.parse((await c.get(`${team}/bulk/jobs.json`)).body) as unknown[]
    const bulk = await c.post(`${team}/bulk`, { type: 'domain_age', mode: 'test', inputs: text })
    expect(bulk.status).toBe(400)
    expect(pageText(bulk.body)).toContain('A value is longer than 65,536 characters (record 3, from line 3, starting "oops")')
    expect(bulk.body).toContain(`>${escapeHtml(text)}</textarea>`)
    expect(JSON.parse((await c.get(`${team}/bulk/jobs.json`)).body)).toHaveLength(before.length)
  })

  it('keeps the whole text in the box after a refusal (a cut one lost the values past 100,000 characters)', async () => {
    const made = await c.post(`${team}/lists/live`, { name: 'Long', kind: 'block', item_type: 'email_domain' })
    const at = made.header('location')!.split('?')[0]!
    await c.get(at)
    const values = Array.from({ length: 8000 }, (_, i) => `domain-${i}.example.org`).join('\n')
    const refused = await c.post(`${at}/items`, { values, expires: '2026-02-30' })
    expect(refused.status).toBe(400)
    expect(refused.body).toContain(`>${values}</textarea>`)
    // the refusal names the form's field, and the date typed stays in it
    expect(pageText(refused.body)).toContain('Expires')
    expect(pageText(refused.body)).not.toContain('expires_at')
    expect(refused.body).toContain('name="expires" value="2026-02-30"')
    await c.get(`${team}/bulk`)
    const inputs = Array.from({ length: 8000 }, (_, i) => `user-${i}@example.org`).join('\n')
    const bulk = await c.post(`${team}/bulk`, { type: 'nope', mode: 'test', inputs })
    expect(bulk.status).toBe(400)
    expect(bulk.body).toContain(`>${inputs}</textarea>`)
  })

  it('starts a bulk job of the first column only (one row, not one per line of a note)', async () => {
    await c.get(`${team}/bulk`)
    const started = await c.post(`${team}/bulk`, { type: 'email', mode: 'test', inputs: 'email,note\r\njane@example.com,"line one\r\nbob@example.com\r\nline three"\r\n' })
    expect(started.status).toBe(303)
    const jobs = JSON.parse((await c.get(`${team}/bulk/jobs.json`)).body) as Array<{ total: number }>
    expect(jobs.map((j) => j.total)).toEqual([1])
  })
})
