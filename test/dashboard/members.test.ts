/**
 * Invites and roles in headless Chromium: an owner invites by email (SMTP), the invitee joins with a password,
 * developers see keys but revoke only their own and cannot manage members, a role change takes effect at once,
 * and the endpoint-disabled mail goes to owners and admins only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from './harness.js'
import { browserAvailable } from '../browser-env.js'

const HAS_BROWSER = browserAvailable('test/dashboard/members.test.ts')

let h: Harness
beforeAll(async () => {
  h = await startHarness()
}, 90_000)
afterAll(async () => h?.close())

describe.skipIf(!HAS_BROWSER)('dashboard: invites and roles', () => {
  it('invite → join → developer limits → promote to admin → remove', async () => {
    // set-up, not under test: the owner's account and a session of it made in the store
    const olga = await h.account('olga@example.test', 'Roles & Co')
    const teamUrl = olga.teamUrl
    const owner = await h.signedInPage(olga.userId, `${teamUrl}/keys`)
    await owner.page.getByLabel('Name').fill('owner key')
    await owner.page.getByRole('button', { name: 'Create key' }).click()
    await owner.page.getByTestId('secret').waitFor()

    await owner.page.getByRole('link', { name: 'Members' }).click()
    await owner.page.getByLabel('Email').fill('dev@example.test')
    await owner.page.locator('form[action$="/members/invite"] select[name=role]').selectOption('developer')
    await owner.page.getByRole('button', { name: 'Send invitation' }).click()
    await owner.page.getByText('Invitation sent.').waitFor()
    expect(await owner.page.locator('tr[data-invite="dev@example.test"]').textContent()).toContain('developer')

    const mail = await h.mailTo('dev@example.test', /invited you to Roles & Co/)
    const link = /http:\/\/127\.0\.0\.1:\d+\/dashboard\/invite\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0]
    const dev = await h.newPage({ width: 390, height: 844 })
    await dev.page.goto(link)
    expect(await dev.page.textContent('main')).toMatch(/invited to the team Roles & Co as developer/)
    await dev.page.getByLabel('Choose a password').fill('developer password 1')
    await dev.page.getByRole('button', { name: 'Create account and join' }).click()
    await dev.page.waitForURL(/done=joined/)
    expect(dev.page.url()).toContain(teamUrl)
    // the link is used up
    await dev.page.goto(link)
    expect(await dev.page.textContent('main')).toMatch(/not valid/)

    // developer: sees the owner's key without a revoke button; revoking it by hand is refused
    await dev.page.goto(`${teamUrl}/keys`)
    const ownerKey = dev.page.locator('tr[data-key]', { hasText: 'owner key' })
    expect(await ownerKey.count()).toBe(1)
    expect(await ownerKey.getByRole('button', { name: /Revoke/ }).count()).toBe(0)
    expect(await dev.page.locator('input[name=scopes][value=webhooks]').isDisabled()).toBe(true)
    const keyId = (await ownerKey.getAttribute('data-key'))!
    const csrf = await dev.page.locator('input[name=_csrf]').first().inputValue()
    expect((await dev.page.request.post(`${teamUrl}/keys/${keyId}/revoke`, { form: { _csrf: csrf } })).status()).toBe(403)
    // … but creates and revokes their own
    await dev.page.getByLabel('Name').fill('dev key')
    await dev.page.getByRole('button', { name: 'Create key' }).click()
    await dev.page.getByTestId('secret').waitFor()
    await dev.page.getByRole('button', { name: 'Revoke dev key' }).click()
    await dev.page.getByText('The key is revoked').waitFor()
    // and cannot manage members
    await dev.page.goto(`${teamUrl}/members`)
    expect(await dev.page.getByRole('button', { name: 'Send invitation' }).count()).toBe(0)
    expect((await dev.page.request.post(`${teamUrl}/members/invite`, { form: { _csrf: csrf, email: 'x@example.test', role: 'owner' } })).status()).toBe(403)

    // owner promotes the developer to admin: the revoke button appears for them
    await owner.page.reload()
    await owner.page.getByLabel('Role of dev@example.test').selectOption('admin')
    await owner.page.locator('tr[data-member="dev@example.test"]').getByRole('button', { name: 'Change' }).click()
    await owner.page.getByText('Role changed.').waitFor()
    await dev.page.goto(`${teamUrl}/keys`)
    expect(await dev.page.locator('tr[data-key]', { hasText: 'owner key' }).getByRole('button', { name: /Revoke/ }).count()).toBe(1)
    // an admin may not touch the owner or grant the owner role
    const owners = await h.app.dashboard!.teams.listMembers(teamUrl.split('/').pop()!)
    const ownerId = owners.find((m) => m.role === 'owner')!.userId
    expect((await dev.page.request.post(`${teamUrl}/members/${ownerId}/remove`, { form: { _csrf: csrf } })).status()).toBe(403)

    // removed: the team is gone for them (404)
    await owner.page.getByRole('button', { name: 'Remove dev@example.test' }).click()
    await owner.page.getByText('Member removed.').waitFor()
    expect((await dev.page.goto(`${teamUrl}/keys`))!.status()).toBe(404)
    await owner.context.close()
    await dev.context.close()
  })

  it('mails an endpoint-disabled notice to owners and admins, not developers, once', async () => {
    const t = Date.now()
    const org = await h.app.store.createOrg({ name: 'Notice team', planId: 'free' }, t)
    const teams = h.app.dashboard!.teams
    for (const [i, role] of (['owner', 'admin', 'developer'] as const).entries()) {
      await teams.createUser({ id: `usr_n${i}`, email: `${role}-n@example.test`, passwordHash: 'x' }, t)
      await teams.putMember({ orgId: org.id, userId: `usr_n${i}`, role, createdAt: t })
    }
    const before = h.mails.length
    h.app.webhooks!.notice(org.id, 'whe_missing', 'webhook_endpoint_disabled', 'disabled')
    h.app.webhooks!.notice(org.id, 'whe_missing', 'something_else', 'not mailed')
    expect(await h.app.dashboard!.mailNotices()).toBe(2)
    expect(await h.app.dashboard!.mailNotices()).toBe(0)
    const sent = h.mails.slice(before)
    expect(sent.flatMap((m) => m.to).sort()).toEqual(['admin-n@example.test', 'owner-n@example.test'])
    expect(sent[0]!.subject).toMatch(/Webhook endpoint disabled/)
  })
})
