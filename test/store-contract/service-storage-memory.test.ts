/**
 * The bulk and delivery storage contracts (./bulk-contract.ts, ./delivery-contract.ts) on the in-memory store (SQLite
 * on `:memory:`), a fresh one per case.
 */
import { describe } from 'vitest'
import { createMemoryStore } from '../../src/server/store/sqlite/memory.js'
import { bulkStorageContract } from './bulk-contract.js'
import { deliveryStorageContract } from './delivery-contract.js'
import { sqliteServiceHarness } from './sqlite-harness.js'

const open = async () => sqliteServiceHarness(createMemoryStore())

describe('bulk storage in memory', () => bulkStorageContract(open))
describe('delivery storage in memory', () => deliveryStorageContract(open))
