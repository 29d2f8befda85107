/**
 * The dashboard's mails under attack, on every engine: an unverified account cannot invite; verification mails,
 * invitations, reset links, notes about a sign-up with a taken address and mails to one address are throttled
 * (docs/dashboard.md: verification 1 a minute and 5 an hour per account, 10 a day per address; invitations 10
 * an hour per inviter, 20 an hour per team, 3 a day per invited address; reset links as verification; sign-up notes
 * 3 an hour per address), the page says when the next can go (and Retry-After) — except on the forms that answer
 * alike for every address — and the count holds across two server instances on one database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { engines, signedInClient, start, type Running } from './engines.js'
import { Client, pageText } from './http.js'

const MINUTE = 60_000

/** Mails of forms that answer alike either way go after the answer: waits (up to 10 s) until `done()`. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  expect(done()).toBe(true)
}
/** Gives a mail that must not go the time it would need to arrive. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300))

describe.each(engines('dashboard mail throttle'))('dashboard mail throttle on %s', { concurrent: true }, (engine) => {
  let r: Running
  beforeAll(async () => {
    r = await start(engine)
  }, 60_000)
  afterAll(async () => r?.close())

  // The engines side by side (each its own server, database, clock and mail box); on one engine, in order.
  describe('in order', { sequential: true }, () => {
    const mailsTo = (to: string, subject?: RegExp) => r.mails.filter((m) => m.to === to && (!subject || subject.test(m.subject)))

    it('an unverified account invites nobody: 5 invitations, 5 refusals, no mail, no invitation stored', async () => {
      // set-up, not under test: the account and its session made in the store
      const { client: c, team } = await signedInClient(r, 'unverified@example.test', 'Unverified')
      const members = await c.get(`${team}/members`)
      expect(members.body).not.toContain('/members/invite')
      expect(pageText(members.body)).toMatch(/Verify your email address to invite teammates/)
      for (let i = 0; i < 5; i++) {
        const a = await c.post(`${team}/members/invite`, { email: `stranger${i}@example.test`, role: 'developer' })
        expect(a.status).toBe(403)
        expect(pageText(a.body)).toMatch(/Verify your email address before you invite anyone/)
      }
      expect(r.mails.filter((m) => m.to.startsWith('stranger'))).toEqual([])
      expect(await r.app.dashboard!.teams.listInvites(team.split('/').pop()!, r.clock.t)).toEqual([])
    })

    it('verification mails: 20 resends at once send none (the sign-up mail counts); then 1 a minute, 5 an hour; the page says when', async () => {
      const c = new Client(r.base)
      const team = await c.signUp('resend@example.test', 'Resenders')
      expect(mailsTo('resend@example.test')).toHaveLength(1)
      // the banner of an unverified account offers a new link
      expect((await c.get(`${team}/keys`)).body).toMatch(/<form method="post" action="\/dashboard\/verify\/resend"/)
      for (let i = 0; i < 20; i++) {
        const a = await c.post('/dashboard/verify/resend')
        expect(a.status).toBe(429)
        expect(a.header('retry-after')).toBe('60')
        expect(pageText(a.body)).toMatch(/You can ask for the next one at 10:01 UTC \(in 60 seconds\)/)
      }
      expect(mailsTo('resend@example.test')).toHaveLength(1)

      for (let i = 1; i <= 4; i++) {
        r.clock.t += MINUTE
        const a = await c.post('/dashboard/verify/resend')
        expect(a.status).toBe(200)
        // the fifth mail of the hour: the next only once the first is an hour old
        const next = i < 4 ? `10:0${i + 1} UTC \\(in 60 seconds\\)` : '11:00 UTC \\(in 56 minutes\\)'
        expect(pageText(a.body)).toMatch(new RegExp(`We sent a new verification link to resend@example.test. If it does not arrive, you can ask for another at ${next}`))
      }
      expect(mailsTo('resend@example.test')).toHaveLength(5)
      r.clock.t += MINUTE
      const sixth = await c.post('/dashboard/verify/resend')
      expect(sixth.status).toBe(429)
      // room again once the sign-up mail (10:00) is an hour old
      expect(pageText(sixth.body)).toMatch(/the next one at 11:00 UTC \(in 55 minutes\)/)
      expect(sixth.header('retry-after')).toBe(String(55 * 60))
      expect(mailsTo('resend@example.test')).toHaveLength(5)

      // a second instance over the same database counts the same mails
      const twin = await r.twin()
      try {
        const t = new Client(twin.base)
        for (const [k, v] of c.cookies) t.cookies.set(k, v)
        t.csrf = c.csrf
        expect((await t.post('/dashboard/verify/resend')).status).toBe(429)
        r.clock.t += 55 * MINUTE
        expect((await t.post('/dashboard/verify/resend')).status).toBe(200)
        expect((await c.post('/dashboard/verify/resend')).status).toBe(429)
      } finally {
        await twin.close()
      }
      expect(mailsTo('resend@example.test')).toHaveLength(6)

      // and 10 a day to the address: four more this hour, then none until the sign-up mail is a day old
      for (let i = 0; i < 4; i++) {
        r.clock.t += MINUTE
        expect((await c.post('/dashboard/verify/resend')).status).toBe(200)
      }
      r.clock.t += MINUTE
      const eleventh = await c.post('/dashboard/verify/resend')
      expect(eleventh.status).toBe(429)
      expect(pageText(eleventh.body)).toMatch(/the next one at 10:00 UTC on 2026-11-24 \(in 23 hours\)/)
      expect(mailsTo('resend@example.test')).toHaveLength(10)
    })

    it('reset links: 1 a minute and 5 an hour per account, 10 a day per address; one held back changes nothing in the answer', async () => {
      await signedInClient(r, 'forgetful@example.test', 'Forgetful')
      const resets = () => mailsTo('forgetful@example.test', /Reset your riskcheck password/).length
      const ask = async (email = 'forgetful@example.test') => {
        const anon = new Client(r.base)
        await anon.get('/dashboard/reset')
        const a = await anon.post('/dashboard/reset', { email })
        return { status: a.status, location: a.header('location') }
      }
      const answer = { status: 303, location: '/dashboard/reset?done=sent' }
      // 20 at once: one mail; every answer the same as for an address without an account
      for (let i = 0; i < 20; i++) expect(await ask()).toEqual(answer)
      expect(await ask('nobody@example.test')).toEqual(answer)
      await until(() => resets() === 1)
      for (let i = 1; i <= 5; i++) {
        r.clock.t += MINUTE
        expect(await ask()).toEqual(answer)
      }
      // the sixth of the hour is held back
      await until(() => resets() === 5)
      await settle()
      expect(resets()).toBe(5)
      // and 10 a day to the address
      for (let hour = 1; hour <= 2; hour++) {
        r.clock.t += 60 * MINUTE
        for (let i = 0; i < 5; i++) {
          r.clock.t += MINUTE
          expect(await ask()).toEqual(answer)
        }
      }
      await until(() => resets() === 10)
      await settle()
      expect(resets()).toBe(10)
      expect(r.mails.filter((m) => m.to === 'nobody@example.test')).toEqual([])
    })

    it('a sign-up with a taken address: the note to its owner 3 an hour, and every answer alike', async () => {
      await signedInClient(r, 'taken@example.test', 'Takers')
      const notes = () => mailsTo('taken@example.test', /Someone tried to sign up/).length
      const answers = new Set<string>()
      for (let i = 0; i < 6; i++) {
        const a = new Client(r.base)
        await a.get('/dashboard/signup')
        const res = await a.post('/dashboard/signup', { email: 'taken@example.test', password: 'attacker password', team: `Copy ${i}` })
        answers.add(`${res.status} ${res.header('location')} ${res.header('set-cookie') ?? ''}`)
      }
      expect([...answers]).toEqual(['303 /dashboard/signup/sent '])
      await until(() => notes() === 3)
      await settle()
      expect(notes()).toBe(3)
      r.clock.t += 60 * MINUTE
      const later = new Client(r.base)
      await later.get('/dashboard/signup')
      await later.post('/dashboard/signup', { email: 'taken@example.test', password: 'attacker password', team: 'Later' })
      await until(() => notes() === 4)
    })

    it('invitations: 10 an hour per inviter, then a 429 page that says when; 3 a day to one address from any teams', async () => {
      const { client: c, team } = await signedInClient(r, 'inviter@example.test', 'Inviters', { verified: true })
      for (let i = 0; i < 10; i++) expect((await c.post(`${team}/members/invite`, { email: `guest${i}@example.test`, role: 'developer' })).status).toBe(303)
      const over = await c.post(`${team}/members/invite`, { email: 'guest10@example.test', role: 'developer' })
      expect(over.status).toBe(429)
      expect(pageText(over.body)).toMatch(/The next one can be sent at \d\d:\d\d UTC \(in 60 minutes\)/)
      expect(Number(over.header('retry-after'))).toBe(3600)
      expect(r.mails.filter((m) => /^guest\d+@/.test(m.to))).toHaveLength(10)
      expect(await r.app.dashboard!.teams.listInvites(team.split('/').pop()!, r.clock.t)).toHaveLength(10)

      // a third party mailed by four teams: the fourth invitation is held back
      const statuses: number[] = []
      for (let i = 0; i < 4; i++) {
        const { client: t, team: tt } = await signedInClient(r, `team${i}@example.test`, `Team ${i}`, { verified: true })
        statuses.push((await t.post(`${tt}/members/invite`, { email: 'victim@example.test', role: 'developer' })).status)
      }
      expect(statuses).toEqual([303, 303, 303, 429])
      expect(mailsTo('victim@example.test')).toHaveLength(3)
    })
  })
})

describe('dashboard mail throttle per team', { concurrent: true }, () => {
  it('counts every inviter of a team together (limits as options)', async () => {
    const r = await start('sqlite', { dashboard: { mailLimits: { invite: [{ per: 'team', limit: 2, windowMs: 3_600_000 }] } } })
    try {
      const { client: owner, team } = await signedInClient(r, 'owner@example.test', 'Team', { verified: true })
      expect((await owner.post(`${team}/members/invite`, { email: 'admin@example.test', role: 'admin' })).status).toBe(303)
      // the admin joins through the link (which verifies the address) and invites once more: the team's second
      const link = /\/dashboard\/invite\?token=[A-Za-z0-9_-]+/.exec(r.mails.find((m) => m.to === 'admin@example.test')!.text)![0]
      const admin = new Client(r.base)
      await admin.get(link)
      expect((await admin.post('/dashboard/invite', { token: new URL(link, r.base).searchParams.get('token')!, password: 'correct horse battery' })).status).toBe(303)
      await admin.get(`${team}/members`)
      expect((await admin.post(`${team}/members/invite`, { email: 'dev1@example.test', role: 'developer' })).status).toBe(303)
      expect((await owner.post(`${team}/members/invite`, { email: 'dev2@example.test', role: 'developer' })).status).toBe(429)
      expect((await admin.post(`${team}/members/invite`, { email: 'dev3@example.test', role: 'developer' })).status).toBe(429)
      expect(r.mails.filter((m) => m.to.startsWith('dev')).map((m) => m.to)).toEqual(['dev1@example.test'])
    } finally {
      await r.close()
    }
  })

  it('refuses limits that are not limits', async () => {
    await expect(start('memory', { dashboard: { mailLimits: { invite: [{ per: 'team', limit: 0, windowMs: 60_000 }] } } })).rejects.toThrow(/limit must be a whole number/)
    await expect(start('memory', { dashboard: { mailLimits: { verify: [{ per: 'account', limit: 1, windowMs: 2 * 86_400_000 }] } } })).rejects.toThrow(/windowMs must be/)
  })
})
