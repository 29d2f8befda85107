/**
 * What the bulk and delivery contract suites (./bulk-contract.ts, ./delivery-contract.ts) need of a database besides
 * the storage under test: orgs with a known balance, the balance and row counts read back, and a teardown. Each
 * engine of ./engines.ts builds its own.
 */
import type { BulkServiceStorage, DeliveryServiceStorage } from '../../src/server/store/contracts/service-storage.js'

/** The clock of every case (the bulk fakes' clock). */
export const NOW = Date.parse('2026-11-22T10:00:00Z')

export interface ServiceHarness {
  bulk: BulkServiceStorage
  webhooks: DeliveryServiceStorage
  /** A new org whose period runs from before {@link NOW} to well after it, with these credits. */
  createOrg(credits: { subscription: number; purchased: number }): Promise<string>
  /** subscription + purchased credits of the org, read from its row. */
  balance(orgId: string): Promise<number>
  /** The org's period end and the lookups counted in it, read from its row. */
  usage(orgId: string): Promise<{ periodEnd: number; periodLookups: number }>
  /**
   * Ends the org's period just before {@link NOW} with an allowance of `monthlyCredits` (a state the storages do not
   * write): the next credit operation renews it.
   */
  endPeriod(orgId: string, monthlyCredits: number): Promise<void>
  /** What is stored, every org and owner together. */
  stored(): Promise<Stored>
  done(): Promise<void>
}

/** What a harness reads back of its database: counts of the bulk tables, the outbox, the deliveries. */
export interface Stored {
  jobs: number
  rows: number
  pendingRows: number
  /** Credit reservations not closed yet. */
  reservations: number
  /** The outbox, oldest first. */
  events: Array<{ id: string; type: string }>
  /** The event id of every delivery. */
  deliveries: string[]
}

/** Events of the outbox of type `type`. */
export const eventsOfType = (s: Stored, type: string) => s.events.filter((e) => e.type === type).length

export type OpenHarness = () => Promise<ServiceHarness>

/** {@link ServiceHarness.stored} of a database with the server's tables (SQLite and PostgreSQL name them alike). */
export async function storedInTables(all: (sql: string) => Promise<Array<Record<string, unknown>>>): Promise<Stored> {
  const count = async (sql: string) => Number((await all(sql))[0]!.n)
  return {
    jobs: await count('SELECT count(*) AS n FROM bulk_jobs'),
    rows: await count('SELECT count(*) AS n FROM bulk_rows'),
    pendingRows: await count('SELECT count(*) AS n FROM bulk_rows WHERE state = 0'),
    reservations: await count('SELECT count(*) AS n FROM bulk_reservations'),
    events: (await all('SELECT id, type FROM events ORDER BY seq')).map((r) => ({ id: String(r.id), type: String(r.type) })),
    deliveries: (await all('SELECT event_id FROM webhook_deliveries')).map((r) => String(r.event_id)),
  }
}
