import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { createPolicy, evaluate } from './engine.js'
import { canonicalPolicyJson, formatPolicyIssues, loadPolicyFile, parsePolicy, PolicyFileError, policyFromObject, policyVersion } from './policy-file.js'

const dir = mkdtempSync(join(tmpdir(), 'riskcheck-policy-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const YAML = `# Stricter on throwaway addresses
$schema: ./node_modules/riskcheck/docs/policy.schema.json
description: checkout hardening, March
weights:
  email_disposable: 90
  ip_vpn: 60
thresholds: { medium: 35 }
rules:
  - unusable_input_blocks
  - name: tor_blocks
    when: { any: [ip_tor] }
    action: block
`
const JSON_TEXT = JSON.stringify({
  rules: ['unusable_input_blocks', { action: 'block', name: 'tor_blocks', when: { any: ['ip_tor'] } }],
  thresholds: { medium: 35 },
  weights: { ip_vpn: 60, email_disposable: 90 },
})

async function issuesOf(text: string, source: string) {
  try {
    await parsePolicy(text, { source })
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyFileError)
    return formatPolicyIssues((e as PolicyFileError).issues)
  }
  throw new Error('expected the policy to be rejected')
}

describe('policy files', () => {
  it('read the same from YAML and JSON: one policy, one version id whatever the key order, comments, $schema or description', async () => {
    const y = await parsePolicy(YAML, { source: 'p.yaml' })
    const j = await parsePolicy(JSON_TEXT, { source: 'p.json' })
    expect(y.version).toMatch(/^pol_[0-9a-f]{16}$/)
    expect(j.version).toBe(y.version)
    expect(j.canonical).toBe(y.canonical)
    expect(y.canonical).toBe(
      '{"rules":["unusable_input_blocks",{"action":"block","name":"tor_blocks","when":{"any":["ip_tor"]}}],"thresholds":{"medium":35},"weights":{"email_disposable":90,"ip_vpn":60}}',
    )
    expect(y.description).toBe('checkout hardening, March')
    expect(y.overrides).not.toHaveProperty('$schema')
    expect(y.policy).toEqual(createPolicy(y.overrides))
    expect(evaluate(['ip_tor'], { policy: y.policy }).action).toBe('block')
    expect(evaluate(['ip_vpn'], { policy: y.policy }).action).toBe('verify')
    expect(y.warnings).toEqual([])
  })

  it('a change of any scoring value changes the version id; the order of rules matters', () => {
    const base = { weights: { ip_vpn: 60 }, rules: ['unusable_input_blocks', { name: 't', when: { any: ['ip_tor'] }, action: 'block' }] }
    const v = policyVersion(base as never)
    expect(policyVersion({ weights: { ip_vpn: 61 }, rules: base.rules } as never)).not.toBe(v)
    expect(policyVersion({ ...base, rules: [...base.rules].reverse() } as never)).not.toBe(v)
    expect(policyVersion({ ...base, description: 'other words' } as never)).toBe(v)
    expect(policyVersion({})).toBe(policyVersion({ $schema: 'x' }))
    expect(canonicalPolicyJson({ thresholds: { high: 70, medium: 30 } })).toBe('{"thresholds":{"high":70,"medium":30}}')
  })

  it('lists every problem of a YAML file with its path and line', async () => {
    const text = `weights:
  email_disposable: 120
  ip_vpn: 50
  nope: 3
thresholds: { medium: 70, high: 60 }
rules:
  - name: tor
    when: { any: [ip_tor, bad_code] }
    action: block
contexts:
  wedding: {}
`
    expect(await issuesOf(text, 'p.yaml')).toEqual([
      'weights.email_disposable (line 2): must be a number from 0 to 100 (got 120)',
      'weights.nope (line 4): is not a factor code of the vocabulary (see "Factor vocabulary" in docs/scoring.md)',
      'thresholds (line 5): must satisfy medium <= high <= critical (got medium 70, high 60, critical 85)',
      'rules[0].when.any[1] (line 8): must be a factor code of the vocabulary (got "bad_code")',
      'contexts.wedding (line 11): is not a context (signup, lead, checkout)',
    ])
  })

  it('lists the problems of a JSON file with lines too, and reports syntax errors and duplicate keys', async () => {
    expect(await issuesOf('{\n  "weights": {\n    "ip_vpn": "high"\n  }\n}\n', 'p.json')).toEqual([
      'weights.ip_vpn (line 3): must be a number from 0 to 100 (got "high")',
    ])
    const [syntax] = await issuesOf('{\n  "weights": { "ip_vpn": 60, }\n}', 'p.json')
    expect(syntax).toMatch(/^\(file\) \(line 2\): is not valid JSON: /)
    expect(await issuesOf('{"weights": {"ip_vpn": 60},\n "weights": {}}', 'p.json')).toEqual([
      expect.stringMatching(/^\(file\) \(line 2\): has a key twice: /),
    ])
    expect(await issuesOf('weights:\n  ip_vpn: 60\nweights: {}\n', 'p.yaml')).toEqual([expect.stringMatching(/^\(file\) \(line 3\): has a key twice/)])
    expect((await issuesOf('weights: [1, 2\nthresholds: x: y', 'p.yaml'))[0]).toMatch(/^\(file\) \(line \d\): is not valid YAML: /)
    expect(await issuesOf('', 'p.yaml')).toEqual([expect.stringMatching(/^\(file\): must be a mapping of policy fields/)])
  })

  it('refuses a YAML alias bomb instead of expanding it', async () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 8 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}, *${String.fromCharCode(97 + i)}]`)].join('\n')
    const [issue] = await issuesOf(bomb, 'bomb.yaml')
    expect(issue).toMatch(/is not valid YAML: .*alias/i)
  })

  it('refuses mappings or lists nested more than 32 levels deep (YAML and JSON) before composing them, with the line', async () => {
    // 32 levels (the root and 31 lists) are read; one more is refused, whatever the syntax
    const seqs = (n: number) => `description:\n  ${'- '.repeat(n)}x\n`
    expect(await issuesOf(seqs(31), 'p.yaml')).toEqual([expect.stringMatching(/^description \(line 2\): must be a string/)])
    const refused = '(file) (line 2): nests mappings or lists more than 32 levels deep; a policy needs 7'
    expect(await issuesOf(seqs(32), 'p.yaml')).toEqual([refused])
    expect(await issuesOf(`{\n"description": ${'['.repeat(32)}${']'.repeat(32)}}`, 'p.json')).toEqual([refused])
    expect(await issuesOf(`weights:\n  ${'{a: '.repeat(40)}1${'}'.repeat(40)}\n`, 'p.yaml')).toEqual([refused])
    const blocks = Array.from({ length: 40 }, (_, i) => `${' '.repeat(i)}a:`).join('\n')
    expect(await issuesOf(`${blocks} 1\n`, 'p.yaml')).toEqual(['(file) (line 33): nests mappings or lists more than 32 levels deep; a policy needs 7'])
  })

  it('refuses a mapping of more than 256 keys before composing it (its cost grows with the square of its keys)', async () => {
    const keys = (n: number) => Array.from({ length: n }, (_, i) => `k${i}: 1`)
    const unknown = await issuesOf(`weights: {${keys(256).join(', ')}}`, 'p.yaml')
    expect(unknown).toHaveLength(256)
    expect(unknown[0]).toMatch(/^weights\.k0 \(line 1\): is not a factor code/)
    const refused = "(file) (line 2): has a mapping of more than 256 keys; a policy's largest lists every factor code (61)"
    expect(await issuesOf(`description: x\nweights: {${keys(8000).join(', ')}}`, 'p.yaml')).toEqual([refused])
    expect(await issuesOf(`description: x\nweights:\n${keys(257).map((k) => `  ${k}`).join('\n')}\n`, 'p.yaml')).toEqual([refused.replace('line 2', 'line 3')])
    const json = JSON.stringify({ weights: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, 1])) })
    expect(await issuesOf(json, 'p.json')).toEqual([refused.replace('line 2', 'line 1')])
  })

  it('a few kilobytes nested thousands deep, parsed twice, leave the process alive (it crashed out of memory)', async () => {
    // in a child: the second parse of such a text used to end the whole process (a fatal error, nothing to catch)
    const file = pathToFileURL(fileURLToPath(new URL('./policy-file.ts', import.meta.url))).href
    const script = `const { parsePolicy } = await import(${JSON.stringify(file)})
for (const text of ['description:\\n  ' + '- '.repeat(10000) + 'x', '{"description": ' + '['.repeat(10000) + ']'.repeat(10000) + '}', '[' .repeat(10000)])
  for (let i = 0; i < 2; i++) await parsePolicy(text).catch((e) => console.log(e.issues?.[0]?.message ?? String(e)))`
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' })
    expect(stdout.trim().split('\n')).toEqual(Array(6).fill('nests mappings or lists more than 32 levels deep; a policy needs 7'))
  })

  it('guesses the format from the text when the name does not tell', async () => {
    expect((await parsePolicy(JSON_TEXT)).version).toBe((await parsePolicy(YAML)).version)
  })

  it('loads files from disk; a missing file is the file system error, not a PolicyFileError', async () => {
    const path = join(dir, 'policy.yml')
    writeFileSync(path, YAML)
    const file = await loadPolicyFile(path)
    expect(file.source).toBe(path)
    expect(file.version).toBe((await parsePolicy(YAML)).version)
    await expect(loadPolicyFile(join(dir, 'missing.yaml'))).rejects.toMatchObject({ code: 'ENOENT' })
    const big = join(dir, 'big.json')
    writeFileSync(big, `{"description": "${'x'.repeat(1024 * 1024)}"}`)
    await expect(loadPolicyFile(big)).rejects.toThrow(/larger than 1048576 bytes/)
  })

  it('builds from a stored object (what a server keeps) with the same version id', async () => {
    const y = await parsePolicy(YAML)
    const again = policyFromObject(JSON.parse(y.canonical))
    expect(again.version).toBe(y.version)
    expect(again.policy).toEqual(y.policy)
    expect(() => policyFromObject({ weights: { ip_vpn: 500 } }, { source: 'db' })).toThrow(/^riskcheck scoring: db: weights\.ip_vpn must be a number from 0 to 100/)
  })
})
