/**
 * `riskcheck admin policy …`: an org's own scoring policy (docs/service.md, "Scoring policy").
 *
 *   admin policy set --org ORG_ID FILE [--dry-run] [--changes N] [--labels FILE | --no-outcomes]
 *                                                                   backtest FILE over the org's answers of the last
 *                                                                   7 days, labelled by its outcomes, then apply it
 *                                                                   (--dry-run: only the backtest)
 *   admin policy show --org ORG_ID                                  the org's policy (version, file, what it changes)
 *   admin policy clear --org ORG_ID                                 back to the service's policy
 *
 * The running server reads the change from the org's next request (no restart). Precedence: org policy >
 * `serve --policy` > the built-in default.
 */
import { formatPolicyIssues, LabelsFileError, loadPolicyFile, PolicyFileError, policyFromObject, readLabels, type PolicyFile } from '../scoring/index.js'
import type { OrgPolicyStore } from '../server/store/contracts/org-policies.js'
import type { OutcomeStore } from '../server/store/contracts/outcomes.js'
import { backtestOrg } from '../server/org-backtest.js'
import type { OrgRecord } from '../accounts/types.js'
import { formatBacktestText, labelSourceLine } from './backtest-text.js'
import { describePolicy } from './policy-command.js'
import { UsageError } from './shared.js'

/** What an admin command prints: JSON with --json, else the text. */
interface AdminOutput {
  json: unknown
  text: string
}

/** Changes listed in the text backtest by default. */
const DEFAULT_CHANGES = 20

const iso = (ms: number) => new Date(ms).toISOString()

/** Loads the policy file, or throws a UsageError listing every problem with its path (exit 64). */
async function loadForOrg(path: string): Promise<PolicyFile> {
  try {
    return await loadPolicyFile(path)
  } catch (e) {
    if (e instanceof PolicyFileError) {
      const n = e.issues.length
      throw new UsageError(`${path} is not a valid policy (${n} error${n === 1 ? '' : 's'}):\n${formatPolicyIssues(e.issues).map((l) => `  ${l}`).join('\n')}`)
    }
    throw new UsageError(`cannot read ${path}: ${(e as Error).message}`)
  }
}

/** Reads a labels file (CSV input,label), or throws a UsageError (exit 64). */
async function loadLabels(path: string) {
  try {
    return await readLabels(path)
  } catch (e) {
    throw new UsageError(`${path}: ${e instanceof LabelsFileError ? e.message : `cannot read: ${(e as Error).message}`}`)
  }
}

/**
 * Runs `admin policy <action>` on the policy store of the service's database (SQLite or PostgreSQL). `findOrg`
 * throws the admin's not-found error for an unknown org.
 */
export async function runOrgPolicy(
  policies: OrgPolicyStore,
  action: string,
  positionals: string[],
  values: Record<string, unknown>,
  nowMs: number,
  findOrg: (id: string) => Promise<OrgRecord>,
  outcomes?: OutcomeStore,
): Promise<AdminOutput> {
  const orgFlag = values.org
  if (typeof orgFlag !== 'string' || orgFlag === '') throw new UsageError('--org ORG_ID is required')
  switch (action) {
    case 'set': {
      if (positionals.length !== 1) throw new UsageError(`policy set takes one policy file (got ${positionals.length})`)
      const path = positionals[0]!
      const shown = values.changes === undefined ? DEFAULT_CHANGES : Number(values.changes)
      if (!Number.isSafeInteger(shown) || shown < 0) throw new UsageError(`--changes must be a whole number (got ${String(values.changes)})`)
      const file = await loadForOrg(path)
      if (values.labels !== undefined && values['no-outcomes'] === true) throw new UsageError('--labels FILE and --no-outcomes cannot be used together')
      const labels = typeof values.labels === 'string' ? await loadLabels(values.labels) : null
      const org = await findOrg(orgFlag)
      const previous = await policies.getOrgPolicy(org.id)
      const json = values.json === true
      const bt = await backtestOrg({
        policies,
        outcomes,
        orgId: org.id,
        policy: file.policy,
        nowMs,
        maxChanges: json ? Number.MAX_SAFE_INTEGER : shown,
        labels,
        useOutcomes: values['no-outcomes'] !== true,
      })
      const { report, since } = bt
      const dryRun = values['dry-run'] === true
      const unchanged = previous?.version === file.version
      if (!dryRun) {
        await policies.setOrgPolicy({ orgId: org.id, version: file.version, canonical: file.canonical, description: file.description, source: path, setAt: nowMs })
      }
      const was = previous ? `policy ${previous.version}` : 'the service policy'
      const results = `the answers of ${org.id} in the last 7 days (since ${iso(since)})`
      const outcome = dryRun
        ? `Dry run: nothing changed; ${org.id} still uses ${was}.`
        : unchanged
          ? `${org.id} already used policy ${file.version}; set again from ${path}.`
          : `Applied: ${org.id} now uses policy ${file.version} (was ${was}), from its next request.`
      const warnings = formatPolicyIssues(file.warnings).map((l) => `warning: ${path}: ${l}`)
      return {
        json: {
          org: org.id,
          policy: { version: file.version, file: path, description: file.description },
          previous: previous?.version ?? null,
          applied: !dryRun,
          dry_run: dryRun,
          answers: { since: iso(since), read: report.read },
          labels: { source: bt.labelSource, file: typeof values.labels === 'string' ? values.labels : null, outcomes: bt.outcomes },
          warnings: file.warnings,
          backtest: report,
        },
        text: [
          ...warnings,
          labelSourceLine(bt, values.labels),
          formatBacktestText(report, { policy: path, version: file.version, results, context: null }, shown).trimEnd(),
          '',
          outcome,
        ].join('\n'),
      }
    }
    case 'show': {
      if (positionals.length > 0) throw new UsageError('policy show takes no arguments besides --org')
      const org = await findOrg(orgFlag)
      const rec = await policies.getOrgPolicy(org.id)
      if (!rec) {
        return {
          json: { org: org.id, policy: null },
          text: `${org.id}: no policy of its own; the service policy applies (riskcheck serve --policy FILE, else the built-in default)`,
        }
      }
      const overrides = JSON.parse(rec.canonical) as Record<string, unknown>
      let lines: string[]
      try {
        lines = describePolicy(policyFromObject(overrides))
      } catch (e) {
        lines = [`not usable by this riskcheck (the server applies the service policy): ${(e as Error).message}`]
      }
      return {
        json: { org: org.id, policy: { version: rec.version, set_at: iso(rec.setAt), file: rec.source, description: rec.description, overrides } },
        text: [
          `${org.id}: policy ${rec.version}${rec.description ? ` — ${rec.description}` : ''}`,
          `  set ${iso(rec.setAt)}${rec.source ? ` from ${rec.source}` : ''}`,
          ...lines.map((l) => `  ${l}`),
        ].join('\n'),
      }
    }
    case 'clear': {
      if (positionals.length > 0) throw new UsageError('policy clear takes no arguments besides --org')
      const org = await findOrg(orgFlag)
      const removed = await policies.clearOrgPolicy(org.id)
      return {
        json: { org: org.id, cleared: removed?.version ?? null },
        text: removed
          ? `${org.id}: policy ${removed.version} cleared; the service policy applies from its next request`
          : `${org.id} had no policy of its own; nothing changed`,
      }
    }
    default:
      throw new UsageError(`unknown admin command "policy ${action}" (set, show or clear; see riskcheck admin --help)`)
  }
}
