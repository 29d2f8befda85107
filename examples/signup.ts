// A signup handler that asks riskcheck for one recommendation and branches on it.
// Run it: npx tsx examples/signup.ts   (test mode: no network, deterministic answers)
import { createRiskcheck, type CheckInput } from 'riskcheck'

const rc = createRiskcheck({ mode: process.env.RISKCHECK_MODE === 'live' ? 'live' : 'test' })

export async function handleSignup(form: { email: string; phone?: string }, clientIp: string) {
  const input: CheckInput = { email: form.email, ip: clientIp, phone: form.phone ?? null, context: 'signup' }
  const result = await rc.check(input)
  const why = `${result.verdict.reason} [${result.risk.factors.join(', ') || 'no factors'}]`
  switch (result.recommendation.action) {
    case 'approve':
      return { status: 201, body: 'Welcome!' }
    case 'verify':
      return { status: 202, body: `Check your inbox for a code (${why})` }
    case 'review':
      return { status: 202, body: `Your account is pending review (${why})` }
    case 'block':
      return { status: 422, body: `We cannot create this account (${why})` }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [email, ip] of [
    ['deliverable@example.com', '192.0.2.1'], // test mode: a deliverable mailbox from a clean address → approve
    ['typo@example.com', '192.0.2.1'], // a likely typo → verify
    ['disposable@example.com', '192.0.2.2'], // a throwaway mailbox from a VPN → block
  ] as const) {
    console.log(email, ip, '→', await handleSignup({ email }, ip))
  }
  await rc.close()
}
