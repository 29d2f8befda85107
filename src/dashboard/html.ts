/**
 * HTML of the dashboard: an escaping tagged template (every interpolated value is escaped unless it is already
 * {@link Html}), the one layout every page shares, and small building blocks (forms with their CSRF token, tables,
 * flash messages). Pages carry no inline script or style: the CSP allows only /dashboard/assets/.
 */

/** Markup that is safe to insert as is. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[]

function render(v: Part): string {
  if (v === null || v === undefined || v === false) return ''
  if (v instanceof Html) return v.value
  if (Array.isArray(v)) return (v as readonly Part[]).map(render).join('')
  return escapeHtml(String(v))
}

/** `html\`<p>${text}</p>\``: interpolations escaped, arrays joined, null/undefined/false dropped. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!
  return new Html(out)
}

/** What the layout needs to know about the signed-in person and the team on screen. */
export interface LayoutContext {
  title: string
  /** The signed-in person (absent on the sign-in and sign-up pages). */
  user?: { email: string; verified: boolean }
  team?: { id: string; name: string; role: string }
  teams?: Array<{ id: string; name: string }>
  /** Which nav entry is current. */
  nav?: string
  csrf?: string
  flash?: { kind: 'ok' | 'error'; text: string } | undefined
}

export const NAV: ReadonlyArray<{ id: string; label: string; path: string; admin?: boolean }> = [
  { id: 'keys', label: 'API keys', path: 'keys' },
  { id: 'usage', label: 'Usage & credits', path: 'usage' },
  { id: 'bulk', label: 'Bulk jobs', path: 'bulk' },
  { id: 'webhooks', label: 'Webhooks', path: 'webhooks' },
  { id: 'lists', label: 'Lists', path: 'lists' },
  { id: 'reviews', label: 'Review', path: 'reviews' },
  { id: 'policy', label: 'Policy', path: 'policy', admin: true },
  { id: 'playground', label: 'Playground', path: 'playground' },
  { id: 'members', label: 'Members', path: 'members' },
]

/** A hidden CSRF field. */
export const csrfField = (token: string | undefined) => html`<input type="hidden" name="_csrf" value="${token ?? ''}">`

/** The page: header with team switcher and sign-out, navigation, main content. */
export function layout(ctx: LayoutContext, body: Html): string {
  const base = ctx.team ? `/dashboard/t/${encodeURIComponent(ctx.team.id)}` : '/dashboard'
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${ctx.title} · riskcheck</title>
<link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard/assets/app.css">
<script src="/dashboard/assets/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/dashboard">riskcheck</a>
  ${
    ctx.user
      ? html`<div class="who">
    ${
      ctx.teams && ctx.teams.length > 1
        ? html`<nav class="teams" aria-label="Teams">${ctx.teams.map((t) =>
            html`<a href="/dashboard/t/${encodeURIComponent(t.id)}/keys"${t.id === ctx.team?.id ? html` aria-current="page"` : ''}>${t.name}</a>`,
          )}</nav>`
        : ctx.team
          ? html`<span class="team">${ctx.team.name}</span>`
          : ''
    }
    <span class="email"><a href="/dashboard/account" title="Your account">${ctx.user.email}</a>${ctx.team ? html` <span class="role">${ctx.team.role}</span>` : ''}</span>
    <form method="post" action="/dashboard/signout">${csrfField(ctx.csrf)}<button type="submit" class="link">Sign out</button></form>
  </div>`
      : ''
  }
</header>
${
  ctx.team
    ? html`<nav class="side" aria-label="Dashboard">${NAV.filter((n) => !n.admin || ctx.team?.role === 'owner' || ctx.team?.role === 'admin').map(
        (n) => html`<a href="${base}/${n.path}"${n.id === ctx.nav ? html` aria-current="page"` : ''}>${n.label}</a>`,
      )}</nav>`
    : ''
}
<main id="main" tabindex="-1">
${
  ctx.user && !ctx.user.verified
    ? html`<div class="banner" role="status">Verify your email address to create live keys and invite teammates: follow the link we sent to ${ctx.user.email}.
<form method="post" action="/dashboard/verify/resend" class="inline">${csrfField(ctx.csrf)}<button type="submit" class="link">Send the link again</button></form></div>`
    : ''
}
${ctx.flash ? html`<p class="flash ${ctx.flash.kind}" role="${ctx.flash.kind === 'error' ? 'alert' : 'status'}">${ctx.flash.text}</p>` : ''}
<h1>${ctx.title}</h1>
${body}
</main>
</body>
</html>
`}`
}

/** A cell of {@link dataTable}: its content, or its content with a class (`actions`: buttons, drawn without a label). */
export type Cell = Part | { cls: string; body: Part }

/** A row of {@link dataTable}: its cells in column order and the attributes of its `<tr>` (`data-key`, `id` …). */
export interface Row {
  attrs?: Readonly<Record<string, string>>
  cells: readonly Cell[]
}

const attrsOf = (attrs: Readonly<Record<string, string>> | undefined) =>
  Object.entries(attrs ?? {}).map(([k, v]) => html` ${new Html(k.replace(/[^a-z0-9-]/gi, ''))}="${v}"`)

/**
 * A table whose box never scrolls sideways: in a box under 800 px wide each row is a card of "column: value" lines
 * (app.css reads each cell's `data-label`), and in a wider one a cell breaks a long word rather than widen the table.
 * `empty` is the one row of a table without rows; `wrap` and `body` are attributes of the box and the `<tbody>`.
 */
export function dataTable(
  head: readonly string[],
  rows: readonly Row[],
  options: { empty?: string; wrap?: Readonly<Record<string, string>>; body?: Readonly<Record<string, string>> } = {},
): Html {
  const cell = (c: Cell, i: number) => {
    const { cls, body } = c !== null && typeof c === 'object' && 'cls' in c ? c : { cls: '', body: c as Part }
    return html`<td data-label="${head[i] ?? ''}"${cls ? html` class="${cls}"` : ''}>${body}</td>`
  }
  const tbody =
    rows.length === 0 && options.empty
      ? html`<tr><td colspan="${head.length}" class="muted">${options.empty}</td></tr>`
      : rows.map((r) => html`<tr${attrsOf(r.attrs)}>${r.cells.map(cell)}</tr>\n`)
  return html`<div class="table-wrap"${attrsOf(options.wrap)}><table class="cards">
<thead><tr>${head.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody${attrsOf(options.body)}>${tbody}</tbody></table></div>`
}

/** A date-time for tables: `2026-11-23 14:05 UTC`, or a dash. */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—'
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`
}
