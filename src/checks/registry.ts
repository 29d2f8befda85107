/**
 * Every lookup's check definition, by lookup type. The facade, the CLI and the bulk engine iterate this table, so a
 * new lookup is one module in this folder plus one line here.
 */
import type { LookupType } from '../schema.js'
import type { CheckDefinition } from './types.js'
import { emailCheck } from './email/index.js'
import { phoneCheck } from './phone.js'
import { phoneTypeCheck } from './phone-type.js'
import { ipCheck } from './ip.js'
import { domainAgeCheck } from './domain-age.js'
import { emailAuthCheck } from './email-auth/index.js'

/** The single-input lookups (the combined check is built on top of them in ./combined.ts). */
export const CHECKS = {
  email: emailCheck,
  phone: phoneCheck,
  phone_type: phoneTypeCheck,
  ip: ipCheck,
  domain_age: domainAgeCheck,
  email_auth: emailAuthCheck,
} as const satisfies Record<Exclude<LookupType, 'check'>, CheckDefinition<any, any, any>>

/** A single-input lookup type. */
export type SingleLookupType = keyof typeof CHECKS
