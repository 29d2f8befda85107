// An ES module (`"type": "module"`) using riskcheck as the README shows: `import`, top-level `await`. Compiled by
// test/consumer/run.ts with the tsconfig.json `tsc --init` writes (strict), on TypeScript 7 and 5.9, then run.
import { createRiskcheck, isRiskcheckError, type CheckInput, type CsvStream, type RiskcheckOptions } from 'riskcheck'
import { createPolicy, evaluate, type PolicyOverrides } from 'riskcheck/scoring'

const options: RiskcheckOptions = { mode: 'test', cache: { maxEntries: 100 }, onWarning: (w) => console.error(w.code) }
const rc = createRiskcheck(options)
const input: CheckInput = { email: 'disposable@example.com', ip: '192.0.2.2', context: 'signup' }
const check = await rc.check(input)
const email = await rc.email('typo@example.com')

const job = await rc.bulk.create({ type: 'ip', inputs: ['192.0.2.1', '192.0.2.2'] })
await rc.bulk.waitFor(job.id)
const csv: CsvStream = await rc.bulk.resultsCsv(job.id)
let csvBytes = 0
for await (const chunk of csv) csvBytes += chunk.byteLength

const overrides: PolicyOverrides = { weights: { ip_tor: 90 } }
let rejected = ''
try {
  await rc.ip('not an address')
} catch (e) {
  if (isRiskcheckError(e)) rejected = e.code
}
await rc.close()

console.log(
  JSON.stringify({
    check: check.recommendation.action,
    email: email.details.did_you_mean,
    csv: csvBytes > 0,
    tor: evaluate(['ip_tor'], { policy: createPolicy(overrides) }).action,
    rejected,
  }),
)
