/**
 * Allow/block list benchmark: what 100,000 list items of each type add to a lookup. Two offline instances over the
 * same inputs in one run — one without lists, one with six lists of 100,000 items each (emails, email domains, IPv4
 * and IPv6 addresses and networks, phone numbers, AS numbers) plus every country but a few — taking turns in chunks of
 * 250 inputs, so a busy machine slows both alike; the figures are the medians over the rounds. Prints per lookup type the µs per input (CPU time of the process) with
 * and without the lists, the difference and the ratio; the matching alone (details → matches); and the combined
 * check with the lists, with velocity (in memory) and with both, against the same check with neither — on a stream of
 * sign-ups (new inputs every round, a few in bursts) and on the same inputs every round (see {@link checkInputs}).
 *
 *   npx tsx scripts/bench/lists.ts [--count N] [--rounds R] [--seed S] [--chunk C] [--mix stream|repeat|both] [--cache off|default] [--items N] [--online]
 *
 * `--items N` puts N items in each list instead of 100,000. `--online` runs the instances as `createRiskcheck()` does by
 * default (DNS asked, here of a loopback fake server in another process; no SMTP or RDAP) instead of offline.
 *
 * `--cache default` runs every instance with the default in-memory result cache (what `createRiskcheck()` gives); by
 * default the cache is off, so every lookup is computed.
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
import type { CheckInput } from '../../src/checks/combined.js'
import { getCountries } from 'libphonenumber-js/max'
import { xorshift } from '../../test/xorshift.js'
import { startDnsProcess } from './support/dns-process.js'

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) : dflt
}

const COUNT = arg('--count', 20_000)
const ROUNDS = arg('--rounds', 5)
const SEED = arg('--seed', 7)
const ITEMS = arg('--items', 100_000)
const TARGET_US = 5
const CHUNK = arg('--chunk', 250)
const mixArg = process.argv.indexOf('--mix')
/** The combined check's inputs: `stream` (distinct sign-ups with a few bursts), `repeat` (the same inputs every round), or both. */
const MIX = (mixArg >= 0 ? process.argv[mixArg + 1] : 'both') as 'stream' | 'repeat' | 'both'
if (!['stream', 'repeat', 'both'].includes(MIX)) throw new Error('--mix must be stream, repeat or both')
const cacheArg = process.argv.indexOf('--cache')
const CACHE = cacheArg >= 0 ? process.argv[cacheArg + 1] : 'off'
if (CACHE !== 'off' && CACHE !== 'default') throw new Error('--cache must be off or default')
/** Online instances: DNS questions to a loopback fake server in a process of its own (no SMTP, no RDAP), instead of offline. */
const ONLINE = process.argv.includes('--online')
/** In the sign-up stream: the share of sign-ups that come in bursts, and the sign-ups of one burst. */
const BURST_SHARE = 0.02
const BURST = 20

const rnd = xorshift(SEED)
const pick = <T>(a: readonly T[]): T => a[rnd() % a.length] as T
const hex = (n: number) => n.toString(16)
const v4 = () => `${1 + (rnd() % 223)}.${rnd() % 256}.${rnd() % 256}.${rnd() % 256}`
const v6 = () => `2${hex(rnd() % 0x1000).padStart(3, '0')}:${hex(rnd() % 0x10000)}:${hex(rnd() % 0x10000)}::${hex(rnd() % 0x10000)}`
const DOMAINS = ['gmail.com', 'yahoo.com', 'outlook.com', 'acme-widgets.io', 'example-shop.de', 'mailinator.com']
const email = () => `user${rnd() % 1_000_000}.${rnd() % 100}@${rnd() % 3 === 0 ? `d${rnd() % 200_000}.example.net` : pick(DOMAINS)}`
const phone = () => `+44 7${400 + (rnd() % 500)} ${String(rnd() % 1_000_000).padStart(6, '0')}`

/** With `--online`: mail servers for the named providers; every other name (random domains, blocklist and reverse-DNS questions) does not exist. */
const ZONES = Object.fromEntries(
  DOMAINS.flatMap((d) => [
    [d, { MX: [{ priority: 10, exchange: `mx.${d}` }], TXT: ['v=spf1 mx -all'] }],
    [`mx.${d}`, { A: ['192.0.2.25'] }],
    [`_dmarc.${d}`, { TXT: ['v=DMARC1; p=reject'] }],
  ]),
)

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

/** µs of process CPU spent by `run` over `inputs`. */
async function cpuOf<T>(inputs: readonly T[], from: number, to: number, run: (x: T) => Promise<unknown>): Promise<number> {
  const c0 = process.cpuUsage()
  for (let i = from; i < to; i++) await run(inputs[i] as T)
  const c = process.cpuUsage(c0)
  return c.user + c.system
}

/**
 * One round: the inputs in chunks of CHUNK, each chunk run by both instances in turn (A B, then B A for the next
 * chunk), so a machine whose load changes from second to second slows both alike. µs of CPU per input, each side.
 */
async function round<T>(inputs: readonly T[], a: (x: T) => Promise<unknown>, b: (x: T) => Promise<unknown>): Promise<[number, number]> {
  let ta = 0
  let tb = 0
  for (let from = 0, k = 0; from < inputs.length; from += CHUNK, k++) {
    const to = Math.min(inputs.length, from + CHUNK)
    if (k % 2 === 0) {
      ta += await cpuOf(inputs, from, to, a)
      tb += await cpuOf(inputs, from, to, b)
    } else {
      tb += await cpuOf(inputs, from, to, b)
      ta += await cpuOf(inputs, from, to, a)
    }
  }
  return [ta / inputs.length, tb / inputs.length]
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const f2 = (n: number) => n.toFixed(2)

/** Prints and returns the difference; the target is µs more per input, or (for the combined check) a ratio. */
async function compare<T>(
  label: string,
  plain: Riskcheck,
  listed: Riskcheck,
  inputs: readonly T[] | ((round: number) => readonly T[]),
  run: (rc: Riskcheck, x: T) => Promise<unknown>,
  target: { us: number } | { ratio: number } = { us: TARGET_US },
  warmInputs?: readonly T[],
) {
  const inputsOf = typeof inputs === 'function' ? inputs : () => inputs
  const warm = warmInputs ?? inputsOf(0).slice(0, 2000)
  for (const rc of [plain, listed]) for (const x of warm) await run(rc, x)
  const a: number[] = []
  const b: number[] = []
  const ratios: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    const [x, y] = await round(inputsOf(r), (v) => run(plain, v), (v) => run(listed, v))
    a.push(x)
    b.push(y)
    ratios.push(y / x)
  }
  const without = median(a)
  const withLists = median(b)
  // the median of the rounds' differences and ratios (each round's two sides ran interleaved, under the same load)
  const diff = median(b.map((y, i) => y - (a[i] as number)))
  const ratio = median(ratios)
  const ok = 'us' in target ? diff <= target.us : ratio <= target.ratio
  const goal = 'us' in target ? `≤ +${target.us} µs` : `≤ ×${target.ratio}`
  console.log(
    `${label.padEnd(18)} without ${f2(without).padStart(7)} µs   with ${f2(withLists).padStart(7)} µs   ${diff < 0 ? '-' : '+'}${f2(Math.abs(diff)).padStart(5)} µs   ×${ratio.toFixed(3)}   ${ok ? 'ok' : 'over'} (${goal})`,
  )
  return diff
}

/**
 * The combined check's inputs per round (the same for both instances compared). `repeat`: the same `n` inputs every
 * round, after a warm-up on the first 2,000 of them — every value's counts grow round after round, so by the third
 * round the velocity factors of most inputs fire, which a stream of sign-ups does not show. `stream`: `n` new sign-ups
 * every round (and 2,000 others for the warm-up), of which BURST_SHARE come in bursts of BURST sign-ups sharing one IP
 * address, one (non-free) email domain and one phone number — the pattern velocity is there to catch.
 */
function checkInputs(mix: 'stream' | 'repeat', n: number): { rounds: (r: number) => readonly CheckInput[]; warm: readonly CheckInput[] } {
  const signup = (): CheckInput => ({ email: email(), ip: rnd() % 4 === 0 ? v6() : v4(), phone: phone(), context: 'signup' })
  if (mix === 'repeat') {
    const same = Array.from({ length: n }, signup)
    return { rounds: () => same, warm: same.slice(0, 2000) }
  }
  const stream = (count: number): CheckInput[] => {
    const out = Array.from({ length: count }, signup)
    const bursts = Math.floor((count * BURST_SHARE) / BURST)
    for (let b = 0; b < bursts; b++) {
      const ip = v4()
      const domain = `burst${rnd() % 100_000}.example.com`
      const tel = phone()
      const at = rnd() % (count - BURST)
      for (let k = 0; k < BURST; k++) out[at + k] = { email: `u${rnd() % 1_000_000}@${domain}`, ip, phone: tel, context: 'signup' }
    }
    return out
  }
  const rounds = Array.from({ length: ROUNDS }, () => stream(n))
  return { rounds: (r) => rounds[r] as CheckInput[], warm: stream(2000) }
}

async function main() {
  console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} on ${os.cpus().length} cores`)
  console.log(`lists benchmark: ${ITEMS.toLocaleString('en-US')} items per list, ${COUNT.toLocaleString('en-US')} inputs per type, median of ${ROUNDS} rounds (CPU µs per input)`)
  const defs = lists()
  const t0 = performance.now()
  const compiled = compileLists(defs)
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.invalid.slice(0, 3)))
  console.log(`compiled ${defs.reduce((n, d) => n + d.items.length, 0).toLocaleString('en-US')} items in ${Math.round(performance.now() - t0)} ms; heap ${Math.round(process.memoryUsage().heapUsed / 1048576)} MB`)
  const dns = ONLINE ? await startDnsProcess(ZONES) : null
  const mode = dns ? { dns: { servers: [dns.address] }, smtp: { enabled: false }, rdap: { enabled: false } } : { offline: true }
  const common = CACHE === 'off' ? { ...mode, cache: false as const } : mode
  console.log(`result cache: ${CACHE === 'off' ? 'off' : 'the default in-memory cache'}; ${dns ? 'online: DNS on a loopback fake server in another process' : 'offline'}`)
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

  // The matching alone, on details answered once: what the lists cost beyond building the answer, per lookup type.
  const index = (compiled as { index: ListIndex }).index
  for (const [type, xs, lookup] of [
    ['ip', ips, (x: string): Promise<{ details: unknown }> => plain.ip(x)],
    ['email', emails, (x: string): Promise<{ details: unknown }> => plain.email(x)],
    ['phone', phones, (x: string): Promise<{ details: unknown }> => plain.phone(x)],
  ] as const) {
    const details = await Promise.all(xs.slice(0, 5000).map((x) => lookup(x)))
    const c0 = process.cpuUsage()
    for (let r = 0; r < 10; r++) for (const d of details) matchLists(index, type, d.details, 0)
    const c = process.cpuUsage(c0)
    console.log(`matchLists ${type.padEnd(6)} ${f2((c.user + c.system) / (10 * details.length))} µs per answer`)
  }

  // The combined check with lists, with velocity (in memory), and with both, against the same check with neither.
  const withVelocity = createRiskcheck({ ...common, velocity: true })
  const both = createRiskcheck({ ...common, lists: defs, velocity: true })
  const ratio = { ratio: 1.2 }
  const perRound = Math.floor(COUNT / 2)
  for (const mix of MIX === 'both' ? (['stream', 'repeat'] as const) : [MIX]) {
    const { rounds: inputsOf, warm } = checkInputs(mix, perRound)
    console.log(
      mix === 'stream'
        ? `combined check, signup stream: ${perRound.toLocaleString('en-US')} new sign-ups per round, ${BURST_SHARE * 100} % of them in bursts of ${BURST} from one IP, email domain and phone`
        : `combined check, the same ${perRound.toLocaleString('en-US')} inputs every round (counts grow round after round)`,
    )
    const run = (rc: Riskcheck, x: CheckInput) => rc.check(x)
    await compare('rc.check() lists', plain, listed, inputsOf, run, ratio, warm)
    await compare('rc.check() vel.', plain, withVelocity, inputsOf, run, ratio, warm)
    await compare('rc.check() both', plain, both, inputsOf, run, ratio, warm)
  }
  await withVelocity.close()
  await plain.close()
  await listed.close()
  await both.close()
  dns?.close()
}

void main()
