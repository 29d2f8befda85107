/**
 * Allow/block list benchmark: what 100,000 list items of each type add to a lookup. Two offline instances over the
 * same inputs in one run — one without lists, one with six lists of 100,000 items each (emails, email domains, IPv4
 * and IPv6 addresses and networks, phone numbers, AS numbers) plus every country but a few — measured in alternating
 * rounds so a busy machine slows both alike. Prints per lookup type the µs per input (CPU time of the process) with
 * and without the lists, the difference and the ratio; the matching alone (details → matches); and the combined
 * check with the lists, with velocity (in memory) and with both, against the same check with neither.
 *
 *   npx tsx scripts/bench/lists.ts [--count N] [--rounds R] [--seed S]
 *
 * Targets: at most 5 µs more per input with the lists; the combined check with lists and velocity at most 1.2× the
 * check without.
 */
import os from 'node:os'
import { performance } from 'node:perf_hooks'
import { compileLists, type ListIndex } from '../../src/lists/compile.js'
import { matchLists } from '../../src/lists/match.js'
import type { ListDefinition } from '../../src/lists/types.js'
import { createRiskcheck, type Riskcheck } from '../../src/riskcheck.js'
import { getCountries } from 'libphonenumber-js/max'

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : dflt
}

const COUNT = arg('--count', 20_000)
const ROUNDS = arg('--rounds', 5)
const SEED = arg('--seed', 7)
const ITEMS = 100_000
const TARGET_US = 5

function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s
  }
}
const rnd = xorshift(SEED)
const pick = <T>(a: readonly T[]): T => a[rnd() % a.length] as T
const hex = (n: number) => n.toString(16)
const v4 = () => `${1 + (rnd() % 223)}.${rnd() % 256}.${rnd() % 256}.${rnd() % 256}`
const v6 = () => `2${hex(rnd() % 0x1000).padStart(3, '0')}:${hex(rnd() % 0x10000)}:${hex(rnd() % 0x10000)}::${hex(rnd() % 0x10000)}`
const DOMAINS = ['gmail.com', 'yahoo.com', 'outlook.com', 'acme-widgets.io', 'example-shop.de', 'mailinator.com']
const email = () => `user${rnd() % 1_000_000}.${rnd() % 100}@${rnd() % 3 === 0 ? `d${rnd() % 200_000}.example.net` : pick(DOMAINS)}`
const phone = () => `+44 7${400 + (rnd() % 500)} ${String(rnd() % 1_000_000).padStart(6, '0')}`

/** Six lists of ITEMS items each, and every country but the ones the inputs are in. */
function lists(): ListDefinition[] {
  const many = (f: () => string) => Array.from({ length: ITEMS }, f)
  return [
    { name: 'emails', kind: 'block', itemType: 'email', items: many(email) },
    { name: 'domains', kind: 'block', itemType: 'email_domain', items: many(() => `d${rnd() % 1_000_000}.example.org`) },
    { name: 'ips', kind: 'block', itemType: 'ip', items: many(() => (rnd() % 2 ? `${v4()}/${16 + (rnd() % 17)}` : `${v6()}/${32 + (rnd() % 97)}`)) },
    { name: 'phones', kind: 'block', itemType: 'phone', items: many(phone) },
    { name: 'asns', kind: 'allow', itemType: 'asn', items: many(() => `AS${1 + (rnd() % 400_000)}`) },
    { name: 'countries', kind: 'block', itemType: 'country', items: getCountries().filter((c) => !['GB', 'US', 'DE'].includes(c)) },
  ]
}

/** µs of process CPU per input of `run` over `inputs`. */
async function cpuPerInput(inputs: readonly string[], run: (x: string) => Promise<unknown>): Promise<number> {
  const c0 = process.cpuUsage()
  for (const x of inputs) await run(x)
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / inputs.length
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const f2 = (n: number) => n.toFixed(2)

/** Prints and returns the difference; the target is µs more per input, or (for the combined check) a ratio. */
async function compare(
  label: string,
  plain: Riskcheck,
  listed: Riskcheck,
  inputs: string[],
  run: (rc: Riskcheck, x: string) => Promise<unknown>,
  target: { us: number } | { ratio: number } = { us: TARGET_US },
) {
  const warm = inputs.slice(0, Math.min(2000, inputs.length))
  for (const rc of [plain, listed]) for (const x of warm) await run(rc, x)
  const a: number[] = []
  const b: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    a.push(await cpuPerInput(inputs, (x) => run(plain, x)))
    b.push(await cpuPerInput(inputs, (x) => run(listed, x)))
  }
  const without = median(a)
  const withLists = median(b)
  const diff = withLists - without
  const ok = 'us' in target ? diff <= target.us : withLists / without <= target.ratio
  const goal = 'us' in target ? `≤ +${target.us} µs` : `≤ ×${target.ratio}`
  console.log(
    `${label.padEnd(18)} without ${f2(without).padStart(7)} µs   with ${f2(withLists).padStart(7)} µs   +${f2(diff).padStart(5)} µs   ×${(withLists / without).toFixed(3)}   ${ok ? 'ok' : 'over'} (${goal})`,
  )
  return diff
}

async function main() {
  console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} cores`)
  console.log(`lists benchmark: ${ITEMS.toLocaleString('en-US')} items per list, ${COUNT.toLocaleString('en-US')} inputs per type, median of ${ROUNDS} rounds (CPU µs per input)`)
  const defs = lists()
  const t0 = performance.now()
  const compiled = compileLists(defs)
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.invalid.slice(0, 3)))
  console.log(`compiled ${defs.reduce((n, d) => n + d.items.length, 0).toLocaleString('en-US')} items in ${Math.round(performance.now() - t0)} ms; heap ${Math.round(process.memoryUsage().heapUsed / 1048576)} MB`)
  const common = { offline: true, cache: false as const }
  const plain = createRiskcheck(common)
  const listed = createRiskcheck({ ...common, lists: defs })

  const ips = Array.from({ length: COUNT }, () => (rnd() % 4 === 0 ? v6() : v4()))
  const emails = Array.from({ length: COUNT }, email)
  const phones = Array.from({ length: COUNT }, phone)
  const diffs = [
    await compare('rc.ip()', plain, listed, ips, (rc, x) => rc.ip(x)),
    await compare('rc.email()', plain, listed, emails, (rc, x) => rc.email(x)),
    await compare('rc.phone()', plain, listed, phones, (rc, x) => rc.phone(x)),
  ]
  console.log(`worst difference: +${f2(Math.max(...diffs))} µs per input (target ≤ ${TARGET_US} µs)`)

  // The matching alone, on details answered once: what the lists cost beyond building the answer.
  const index = (compiled as { index: ListIndex }).index
  const details = await Promise.all([...ips.slice(0, 5000).map((x) => plain.ip(x)), ...emails.slice(0, 5000).map((x) => plain.email(x))])
  const c0 = process.cpuUsage()
  for (let r = 0; r < 10; r++) for (const d of details) matchLists(index, d.request.type, d.details, 0)
  const c = process.cpuUsage(c0)
  console.log(`matchLists alone:  ${f2((c.user + c.system) / (10 * details.length))} µs per answer (IP and email details)`)

  // The combined check with lists, with velocity (in memory), and with both, against the same check with neither.
  const withVelocity = createRiskcheck({ ...common, velocity: true })
  const both = createRiskcheck({ ...common, lists: defs, velocity: true })
  const checks = Array.from({ length: Math.floor(COUNT / 2) }, (_, i) => `${i}`)
  const inputOf = (i: string) => ({ email: emails[Number(i)] as string, ip: ips[Number(i)] as string, phone: phones[Number(i)] as string, context: 'signup' as const })
  const ratio = { ratio: 1.2 }
  await compare('rc.check() lists', plain, listed, checks, (rc, i) => rc.check(inputOf(i)), ratio)
  await compare('rc.check() vel.', plain, withVelocity, checks, (rc, i) => rc.check(inputOf(i)), ratio)
  await compare('rc.check() both', plain, both, checks, (rc, i) => rc.check(inputOf(i)), ratio)
  await withVelocity.close()
  await plain.close()
  await listed.close()
  await both.close()
}

void main()
