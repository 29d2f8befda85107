/** The content of each generated block of README.md and docs/*.md (scripts/readme.ts), computed from the code. */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CHECKS } from '../src/checks/registry.js'
import { FACTORS, FACTOR_CODES, type FactorGroup } from '../src/scoring/factors.js'
import { BLOCKING_FACTORS, DEFAULT_POLICY } from '../src/scoring/rules.js'
import { CONTEXTS } from '../src/schema.js'
import { GRADE_RUBRIC } from '../src/checks/email-auth/grade.js'
import { DATA_SOURCE_NAMES, DATA_SOURCES } from '../src/data/catalog.js'
import { formatAge } from '../src/data/status.js'
import { BILLING_TABLE } from '../src/billing.js'
import { defaultLabel, flagDefaultLabel, SETTINGS } from '../src/settings.js'
import { envNameOf, serveReads } from '../src/cli/serve-settings.js'
import { SERVER_TYPE_PACKAGES, serverInstallCommand } from '../src/server/packages.js'

const GROUP_TITLES: Record<FactorGroup, string> = {
  email: 'email',
  domain: 'domain age',
  phone: 'phone',
  ip: 'IP',
  email_auth: 'email authentication',
  combined: 'combined check (cross-signals)',
  lists: 'every lookup (your lists)',
  velocity: 'velocity',
  outcomes: 'email, phone, IP (your outcomes)',
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

function creditsTable(): string {
  return ['| lookup | credits |', '|---|---|', ...BILLING_TABLE.map((r) => `| ${r.lookup} | ${r.credits} |`)].join('\n')
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

function gradeRubric(): string {
  const out = ['| part | points | for |', '|---|---|---|']
  for (const p of GRADE_RUBRIC.points) for (const i of p.items) out.push(`| ${p.part} (max ${p.max}) | ${i.points} | ${i.when} |`)
  out.push('', 'Letter from the points: ' + GRADE_RUBRIC.thresholds.map((t) => `${t.grade} ≥ ${t.minPoints}`).join(', ') + '. Then the caps:', '')
  out.push('| cap | at most | when |', '|---|---|---|')
  for (const c of GRADE_RUBRIC.caps) out.push(`| \`${c.id}\` | ${c.maxGrade} | ${c.when} |`)
  out.push('', `A+ also requires: ${GRADE_RUBRIC.aPlusRequires.join(', ')}.`, '', `DNS failures: ${GRADE_RUBRIC.dnsFailures}`)
  return out.join('\n')
}

function dataSourceTable(): string {
  const rows = [
    '| source | data_sources name | what it answers | default upstream | license | changes | stale after | `--source NAME=` takes |',
    '|---|---|---|---|---|---|---|---|',
  ]
  for (const n of DATA_SOURCE_NAMES) {
    const s = DATA_SOURCES[n]
    rows.push(`| \`${n}\` | \`${s.label}@…\` | ${s.title} | ${s.upstream} | ${s.license} | ${s.changes} | ${formatAge(s.maxAgeMs / 1000)} | ${s.override} |`)
  }
  return rows.join('\n')
}

function example(file: string, lang = 'ts'): string {
  const code = readFileSync(fileURLToPath(new URL(`../examples/${file}`, import.meta.url)), 'utf8')
  return ['```' + lang, code.trimEnd(), '```'].join('\n')
}

/** Markdown table cell text: pipes escaped. */
const cell = (text: string) => text.replace(/\|/g, '\\|')

/** The options of `createRiskcheck`, one row per setting (src/settings.ts), with its CLI flag and serve variable. */
function optionsTable(): string {
  const rows = SETTINGS.map((s) => {
    const flag = s.flag ? `\`--${s.flag}\`${serveReads(s.flag) ? `<br>\`${envNameOf(s.flag)}\`` : ''}` : ''
    const bounds = s.kind === 'integer' ? ` (${s.min}–${s.max})` : s.kind === 'enum' ? ` (${s.values!.map((v) => `\`'${v}'\``).join(', ')})` : ''
    return `| \`${s.path}\` | ${cell(defaultLabel(s))} | ${flag} | ${cell(s.description)}${bounds} |`
  })
  return ['| option | default | CLI flag, `serve` variable | meaning |', '|---|---|---|---|', ...rows].join('\n')
}

/** The rows of docs/deployment.md's variable table for the lookup settings `riskcheck serve` reads. */
function serveLookupVariables(): string {
  const rows = SETTINGS.filter((s) => s.flag && serveReads(s.flag)).map((s) => {
    const dflt = s.kind === 'boolean' ? '' : ` (default: ${flagDefaultLabel(s)})`
    const list = s.kind === 'list' ? ' — comma-separated' : ''
    return `| \`${envNameOf(s.flag!)}\` | \`--${s.flag}\` | \`${s.path}\`: ${cell(s.flagDescription ?? s.description)}${cell(dflt)}${list} |`
  })
  return rows.join('\n')
}

/** The service's install commands (what `riskcheck serve` prints when its packages are missing), and its types'. */
function serverInstall(): string {
  return [
    '<!-- readme-test: not run (it installs from the npm registry: `npm run test:consumer` runs it) -->',
    '```sh',
    serverInstallCommand(),
    `npm install -D ${SERVER_TYPE_PACKAGES.join(' ')}    # TypeScript; and "types": ["node"] in tsconfig.json`,
    '```',
  ].join('\n')
}

/** Block name → Markdown. */
export function generatedBlocks(): Record<string, string> {
  return {
    factors: factorTable(),
    contexts: contextTable(),
    credits: creditsTable(),
    'test-inputs': testInputs(),
    'example-signup': example('signup.ts'),
    'example-policy': example('policy/policy.yaml', 'yaml'),
    'example-policy-test': example('policy/policy.test.ts'),
    'grade-rubric': gradeRubric(),
    'data-sources': dataSourceTable(),
    options: optionsTable(),
    'serve-lookup-variables': serveLookupVariables(),
    'server-install': serverInstall(),
  }
}
