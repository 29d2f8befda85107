/**
 * A browser-less dashboard client for the hostile-input suites: plain HTTP (node:http, so any header can be forged,
 * Host included) with a cookie jar, the CSRF token read from the last page, and form posts.
 */
import { request as httpRequest } from 'node:http'

/** One answer: status, headers, body. */
export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
  /** A header as one string. */
  header(name: string): string | undefined
}

/** A form: a field, or a repeated field (checkboxes). */
export type FormFields = Record<string, string | string[]>

/** Sends one request to `base` + `path`. */
export function send(base: string, method: string, path: string, options: { headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const url = new URL(path, base)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method, headers: { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const headers = res.headers as Answer['headers']
          resolve({
            status: res.statusCode ?? 0,
            headers,
            body: Buffer.concat(chunks).toString('utf8'),
            header: (name) => {
              const v = headers[name.toLowerCase()]
              return Array.isArray(v) ? v.join(', ') : v
            },
          })
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    if (options.body !== undefined) req.write(options.body)
    req.end()
  })
}

/** Encodes a form (repeated fields as repeated pairs). */
export function encodeForm(fields: FormFields): string {
  const p = new URLSearchParams()
  for (const [k, v] of Object.entries(fields)) for (const item of Array.isArray(v) ? v : [v]) p.append(k, item)
  return p.toString()
}

/** A person in a browser without a browser: cookies kept, the CSRF token of the last page reused. */
export class Client {
  readonly cookies = new Map<string, string>()
  csrf = ''
  constructor(
    readonly base: string,
    /** Headers sent with every request (e.g. a forged Host). */
    readonly extraHeaders: Record<string, string> = {},
  ) {}

  private headers(more: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    return { ...this.extraHeaders, ...(cookie ? { cookie } : {}), ...more }
  }

  private keep(a: Answer): Answer {
    const set = a.headers['set-cookie']
    for (const c of Array.isArray(set) ? set : set ? [set] : []) {
      const [pair = ''] = c.split(';')
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq)
      const value = pair.slice(eq + 1)
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(c)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(a.body)?.[1]
    if (token) this.csrf = token
    return a
  }

  async get(path: string, headers?: Record<string, string>): Promise<Answer> {
    return this.keep(await send(this.base, 'GET', path, { headers: this.headers(headers) }))
  }

  /** Posts a form with the CSRF token (unless the form names its own `_csrf`). */
  async post(path: string, fields: FormFields = {}, headers?: Record<string, string>): Promise<Answer> {
    const body = encodeForm({ _csrf: this.csrf, ...fields })
    return this.keep(await send(this.base, 'POST', path, { headers: this.headers({ 'content-type': 'application/x-www-form-urlencoded', ...headers }), body }))
  }

  /**
   * Signs up through the form (which answers "check your mail" and signs nobody in), then signs in with the same
   * password; returns the team's base path (`/dashboard/t/org_…`).
   */
  async signUp(email: string, team: string, password = 'correct horse battery'): Promise<string> {
    await this.get('/dashboard/signup')
    const a = await this.post('/dashboard/signup', { email, password, team })
    if (a.status !== 303 || a.header('location') !== '/dashboard/signup/sent') throw new Error(`sign-up of ${email} answered ${a.status} ${a.header('location')}: ${a.body.slice(0, 300)}`)
    await this.get('/dashboard/signin')
    const signedIn = await this.post('/dashboard/signin', { email, password, next: '/dashboard' })
    if (signedIn.status !== 303) throw new Error(`sign-in of ${email} answered ${signedIn.status}: ${signedIn.body.slice(0, 300)}`)
    const home = await this.get('/dashboard')
    const to = home.header('location') ?? ''
    const m = /^(\/dashboard\/t\/[^/]+)\//.exec(to)
    if (!m) throw new Error(`${email} has no team after sign-up: ${home.status} ${to}`)
    await this.get(to)
    return m[1]!
  }
}

/** The text of a page's flash message or error card (tags removed), for assertions. */
export function pageText(body: string): string {
  const main = /<main[^>]*>([\s\S]*)<\/main>/.exec(body)?.[1] ?? body
  return main.replace(/<[^>]+>/g, ' ').replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/\s+/g, ' ').trim()
}
