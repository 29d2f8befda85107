/**
 * Set-up for the browser suites that test something other than signing up. `signUpAndOpen`: a person made in the
 * store (the harness's `account` and `signInAs`), no page drawn. `signUpOverHttp`: one signed up over plain HTTP
 * (test/dashboard/http.ts), for a suite that needs that HTTP client too. The sign-up pages themselves are tested in
 * accounts.test.ts and layout.test.ts.
 */
import type { BrowserContext, Page } from 'playwright-core'
import type { Harness } from './harness.js'
import { Client } from './http.js'

/** The cookies of a plain-HTTP client, as the browser would have kept them (the session's SameSite=Lax, the rest Strict). */
export function cookiesOf(h: Harness, c: Client): Parameters<BrowserContext['addCookies']>[0] {
  const domain = new URL(h.base).hostname
  return [...c.cookies].map(([name, value]) => ({ name, value, domain, path: '/dashboard', httpOnly: true, secure: false, sameSite: name === 'rc_session' ? ('Lax' as const) : ('Strict' as const) }))
}

/** Signs `email` up with a new team over HTTP, follows the verification mail unless `verify` is false; the client, signed in. */
export async function signUpOverHttp(h: Harness, email: string, team: string, { password = 'correct horse battery', verify = true } = {}): Promise<{ client: Client; teamUrl: string }> {
  const client = new Client(h.base)
  const teamPath = await client.signUp(email, team, password)
  if (verify) {
    const mail = await h.mailTo(email, /Verify your email/)
    const link = new URL(/https?:\/\/\S+\/dashboard\/verify\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0])
    const verified = await client.get(`${link.pathname}${link.search}`)
    if (!verified.body.includes('is verified')) throw new Error(`verifying ${email} answered ${verified.status}: ${verified.body.slice(0, 300)}`)
  }
  return { client, teamUrl: `${h.base}${teamPath}` }
}

/**
 * As the harness's signUp, without drawing the sign-up, verification and sign-in pages: the person and team are
 * written to the store, `page`'s context gets a session and `page` opens the team's keys page. Returns the team page URL.
 */
export async function signUpAndOpen(h: Harness, page: Page, email: string, team: string, options: { password?: string; verify?: boolean } = {}): Promise<string> {
  const a = await h.account(email, team, { ...(options.password !== undefined ? { password: options.password } : {}), verified: options.verify ?? true })
  await h.signInAs({ context: page.context(), page }, a.userId, `${a.teamUrl}/keys`)
  return a.teamUrl
}
