/**
 * What the bulk and delivery contract suites (./bulk-contract.ts, ./delivery-contract.ts) need of a database besides
 * the storage under test: orgs with a known balance, the balance and row counts read back, and a teardown. One
 * harness per engine: ./service-storage-sqlite.test.ts, ./service-storage-postgres.test.ts.
 */
import type { BulkServiceStorage, DeliveryServiceStorage } from '../../src/server/store/service-storage.js'

/** The clock of every case (the bulk fakes' clock). */
export const NOW = Date.parse('2026-11-22T10:00:00Z')

export interface ServiceHarness {
  bulk: BulkServiceStorage
  webhooks: DeliveryServiceStorage
  /** A new org whose period runs from before {@link NOW} to well after it, with these credits. */
  createOrg(credits: { subscription: number; purchased: number }): Promise<string>
  /** subscription + purchased credits of the org, read from its row. */
  balance(orgId: string): Promise<number>
  /** Runs a statement without parameters (to set up a state the storages cannot write, e.g. an ended period). */
  exec(sql: string): Promise<void>
  /** Rows of a table (optionally with a WHERE clause without parameters). */
  count(table: string, where?: string): Promise<number>
  done(): Promise<void>
}

export type OpenHarness = () => Promise<ServiceHarness>
