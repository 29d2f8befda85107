/**
 * The bulk and delivery storage contracts (./bulk-contract.ts, ./delivery-contract.ts) on the server's SQLite store,
 * each case on a fresh in-memory database.
 */
import { describe } from 'vitest'
import { createSqliteBulkStorage } from '../../src/server/store/sqlite/bulk.js'
import { createSqliteDeliveryStorage } from '../../src/server/store/sqlite/deliveries.js'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { bulkStorageContract } from './bulk-contract.js'
import { deliveryStorageContract } from './delivery-contract.js'
import { NOW, storedInTables, type ServiceHarness } from './service-harness.js'

async function open(): Promise<ServiceHarness> {
  const store = createSqliteStore(':memory:')
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

describe('bulk storage on SQLite', () => bulkStorageContract(open))
describe('delivery storage on SQLite', () => deliveryStorageContract(open))
