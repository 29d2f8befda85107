// A policy under unit test: re-score last month's labelled signups under the candidate policy before it ships.
// Runs with the project's tests (npx vitest run examples); answers.jsonl is `riskcheck check … --compact` output.
import { expect, it } from 'vitest'
import { backtest, loadPolicyFile, readLabels, readResults } from 'riskcheck/scoring'

it('the signup policy blocks no good customer of the labelled set and lets no known fraud through', async () => {
  const { policy } = await loadPolicyFile(new URL('./policy.yaml', import.meta.url))
  const report = await backtest(readResults(new URL('./answers.jsonl', import.meta.url)), policy, {
    labels: await readLabels(new URL('./labels.csv', import.meta.url)),
  })
  expect(report.labels?.good.candidate.block).toBe(0) // no good customer blocked
  expect(report.labels?.fraud.candidate.approve).toBe(0) // no known fraud approved
  expect(report.labels?.fraud.candidate.block).toBeGreaterThan(report.labels!.fraud.current.block) // more fraud blocked
  expect(report.changes.map((c) => `${c.input}: ${c.current.action} → ${c.candidate.action}`)).toEqual([
    'carla.diaz@example.net · 192.0.2.10 · +12015550101: review → verify',
    'priya.n@example.net · 192.0.2.3 · +12015550102: review → verify',
    'kx99@guerrillamail.com · 192.0.2.1: review → block',
  ])
})
