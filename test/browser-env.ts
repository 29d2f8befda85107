/**
 * The browser suites (the dashboard's pages, the HTML backtest report) run in Debian's headless Chromium. Without it
 * they are skipped with a note saying how to run them, as the PostgreSQL and Redis suites are; `.ci/run` installs
 * Chromium and sets RISKCHECK_TEST_REQUIRE_BROWSER=1, so there a missing browser fails the run instead.
 */
import { existsSync } from 'node:fs'

/** The Chromium binary the suites drive (RISKCHECK_TEST_CHROMIUM, default Debian's `/usr/bin/chromium`). */
export const CHROMIUM = process.env.RISKCHECK_TEST_CHROMIUM || '/usr/bin/chromium'

/** Whether the browser suite `suite` can run; prints why not, or throws when the run requires it. */
export function browserAvailable(suite: string): boolean {
  if (existsSync(CHROMIUM)) return true
  const how = `install Debian's chromium (apt-get install -y chromium) or set RISKCHECK_TEST_CHROMIUM, then npx vitest run ${suite}`
  if (process.env.RISKCHECK_TEST_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing and RISKCHECK_TEST_REQUIRE_BROWSER is set: ${how}`)
  console.log(`[skipped] ${suite}: needs Chromium at ${CHROMIUM}. To run it: ${how} (or .ci/run).`)
  return false
}
