/**
 * The bulk and delivery storage contracts (./bulk-contract.ts, ./delivery-contract.ts) on the server's SQLite store,
 * each case on a fresh in-memory database.
 */
import { describe } from 'vitest'
import { createSqliteStore } from '../../src/server/store/sqlite/store.js'
import { bulkStorageContract } from './bulk-contract.js'
import { deliveryStorageContract } from './delivery-contract.js'
import { sqliteServiceHarness } from './sqlite-harness.js'

const open = async () => sqliteServiceHarness(createSqliteStore(':memory:'))

describe('bulk storage on SQLite', () => bulkStorageContract(open))
describe('delivery storage on SQLite', () => deliveryStorageContract(open))
