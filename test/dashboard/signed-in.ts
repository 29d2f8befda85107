/**
 * Set-up for the browser suites that test something other than signing up: a person signed up over plain HTTP
 * (test/dashboard/http.ts; the same forms, no page drawn), the address verified unless asked not to, and the
 * cookies handed to a browser context. The sign-up pages themselves are tested in accounts.test.ts and layout.test.ts.
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
 * As the harness's signUp, without drawing the sign-up, verification and sign-in pages: `page`'s context gets the
 * session and `page` opens the team's keys page. Returns the team page URL.
 */
export async function signUpAndOpen(h: Harness, page: Page, email: string, team: string, options: { password?: string; verify?: boolean } = {}): Promise<string> {
  const { client, teamUrl } = await signUpOverHttp(h, email, team, options)
  await page.context().addCookies(cookiesOf(h, client))
  await page.goto(`${teamUrl}/keys`)
  return teamUrl
}
