/** The service-storage harness (./service-harness.ts) over a SQLite store: a file, `:memory:`, or the memory store. */
import { createSqliteBulkStorage } from '../../src/server/store/sqlite/bulk.js'
import { createSqliteDeliveryStorage } from '../../src/server/store/sqlite/deliveries.js'
import type { SqliteStore } from '../../src/server/store/sqlite/store.js'
import { NOW, storedInTables, type ServiceHarness } from './service-harness.js'

/** The harness over `store`, closed when done. */
export function sqliteServiceHarness(store: SqliteStore): ServiceHarness {
  const { db } = store
  return {
    bulk: createSqliteBulkStorage(db, store),
    webhooks: createSqliteDeliveryStorage(db, () => NOW),
    async createOrg({ subscription, purchased }) {
      const org = store.createOrg({ name: 'Contract', planId: 'starter' }, NOW - 86_400_000)
      db.prepare('UPDATE orgs SET subscription_credits = ?, purchased_credits = ? WHERE id = ?').run(subscription, purchased, org.id)
      return org.id
    },
    async balance(orgId) {
      return (db.prepare('SELECT subscription_credits + purchased_credits AS b FROM orgs WHERE id = ?').get(orgId) as { b: number }).b
    },
    async usage(orgId) {
      return db.prepare('SELECT period_end AS periodEnd, period_lookups AS periodLookups FROM orgs WHERE id = ?').get(orgId) as { periodEnd: number; periodLookups: number }
    },
    async endPeriod(orgId, monthlyCredits) {
      db.prepare('UPDATE orgs SET monthly_credits = ?, period_end = ? WHERE id = ?').run(monthlyCredits, NOW - 1, orgId)
    },
    stored: () => storedInTables(async (sql) => db.prepare(sql).all() as Array<Record<string, unknown>>),
    async done() {
      store.close()
    },
  }
}
