/**
 * Credits per lookup — a pure function of the billing table (docs/options.md "Caching and credits"):
 *
 * | lookup | credits |
 * |---|---|
 * | email | 1; free if `smtp_check` is `unavailable`, and with `smtp: false` (only free checks run) |
 * | phone | 1; invalid numbers are free |
 * | phone/type | 1, always |
 * | ip | 1 |
 * | domain/age | 1; unregistered domains are free |
 * | domain/email-auth | 1 |
 * | check | the sum of the billed parts |
 *
 * Cache hits and test mode cost 0 (decided by the facade, not here); so does a lookup whose options make it free
 * (`maxCredits` of its check definition: the email lookup with `smtp: false`).
 */
import type { DataByType, LookupType } from './schema.js'

/**
 * The billing table as documented (the credits table of docs/options.md is generated from it; src/options.test.ts
 * checks every rule, test/test-inputs-table.test.ts the free answers against the lookups themselves).
 */
export const BILLING_TABLE: ReadonlyArray<{ lookup: string; credits: string }> = [
  { lookup: 'email', credits: '1; free when `smtp_check` is `unavailable` (no mail server answered: none reachable, all timed out or hung up, the check\'s time budget ran out — or offline), and with `smtp: false` (the mailbox check is skipped and only the free checks run)' },
  { lookup: 'phone', credits: '1; invalid numbers are free' },
  { lookup: 'phone/type', credits: '1, always' },
  { lookup: 'ip', credits: '1' },
  { lookup: 'domain/age', credits: '1; unregistered domains (and registry time-outs) are free' },
  { lookup: 'domain/email-auth', credits: '1' },
  { lookup: 'check', credits: 'the sum of the billed parts' },
]

/** The most a single lookup of `type` can cost (what is reserved before it runs); for `check`, per part. */
export const MAX_CREDITS: Readonly<Record<Exclude<LookupType, 'check'>, number>> = {
  email: 1,
  phone: 1,
  phone_type: 1,
  ip: 1,
  domain_age: 1,
  email_auth: 1,
}

/** Credits a completed (non-cached, live) lookup costs, from its details. */
export function creditsFor<T extends Exclude<LookupType, 'check'>>(type: T, details: DataByType[T]): number {
  switch (type) {
    case 'email':
      return (details as DataByType['email']).smtp_check === 'unavailable' ? 0 : 1
    case 'phone':
      return (details as DataByType['phone']).valid ? 1 : 0
    case 'domain_age':
      // Unregistered (RDAP 404) is free; so is an answer the registry never gave (timeout: found is false too).
      return (details as DataByType['domain_age']).found ? 1 : 0
    case 'phone_type':
    case 'ip':
    case 'email_auth':
      return 1
    default:
      return 1
  }
}
