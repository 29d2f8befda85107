// A CommonJS module (the default of `npm init -y`): `import … = require()` (what `verbatimModuleSyntax` of the
// `tsc --init` tsconfig asks for in CommonJS), and `await` inside an async function.
import riskcheck = require('riskcheck')
import scoring = require('riskcheck/scoring')

async function main(): Promise<void> {
  const rc = riskcheck.createRiskcheck({ mode: 'test' })
  const check = await rc.check({ email: 'disposable@example.com', ip: '192.0.2.2', context: 'signup' })
  const email = await rc.email('typo@example.com')
  await rc.close()
  console.log(JSON.stringify({ check: check.recommendation.action, email: email.details.did_you_mean, tor: scoring.evaluate(['ip_tor']).action }))
}

main() // a rejection ends the process with exit code 1
