/** The content of each generated README block, computed from the code. */
import { CHECKS } from '../src/checks/registry.js'
import { FACTORS, FACTOR_CODES, type FactorGroup } from '../src/scoring/factors.js'
import { BLOCKING_FACTORS, DEFAULT_POLICY } from '../src/scoring/rules.js'
import { CONTEXTS } from '../src/schema.js'

const GROUP_TITLES: Record<FactorGroup, string> = {
  email: 'email',
  domain: 'domain age',
  phone: 'phone',
  ip: 'IP',
  email_auth: 'email authentication',
  combined: 'combined check (cross-signals)',
}

function factorTable(): string {
  const rows = ['| factor | lookup | weight | effect | description |', '|---|---|---|---|---|']
  for (const code of FACTOR_CODES) {
    const f = FACTORS[code] as (typeof FACTORS)[typeof code] & { uncertain?: boolean }
    const effect = f.effect + (f.uncertain ? ', lowers confidence' : '') + ((BLOCKING_FACTORS as readonly string[]).includes(code) ? ', blocks' : '')
    rows.push(`| \`${code}\` | ${GROUP_TITLES[f.group]} | ${f.weight} | ${effect} | ${f.description} |`)
  }
  return rows.join('\n')
}

function contextTable(): string {
  const t = DEFAULT_POLICY.thresholds
  const rows = [
    '| context | verify from | review from | block from | weights changed |',
    '|---|---|---|---|---|',
    `| (none) | ${t.medium} | ${t.high} | ${t.critical} | — |`,
  ]
  for (const c of CONTEXTS) {
    const o = DEFAULT_POLICY.contexts[c] ?? {}
    const th = { ...t, ...(o.thresholds ?? {}) }
    const w = Object.entries(o.weights ?? {})
      .map(([k, v]) => `\`${k}\` ${FACTORS[k as keyof typeof FACTORS].weight} → ${v}`)
      .join(', ')
    rows.push(`| \`${c}\` | ${th.medium} | ${th.high} | ${th.critical} | ${w || '—'} |`)
  }
  return rows.join('\n')
}

function testInputs(): string {
  const out: string[] = []
  for (const def of Object.values(CHECKS)) {
    out.push(`**${def.cli.command}**`, '', '| input | answer |', '|---|---|')
    for (const t of def.testInputs) out.push(`| \`${t.input.replace(/\|/g, '\\|')}\` | ${t.note.replace(/\|/g, '\\|')} |`)
    out.push('')
  }
  return out.join('\n')
}

/** Block name → Markdown. */
export function generatedBlocks(): Record<string, string> {
  return { factors: factorTable(), contexts: contextTable(), 'test-inputs': testInputs() }
}
