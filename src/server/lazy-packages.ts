/**
 * The server packages only some deployments use, loaded at their first use rather than when `riskcheck/server` is
 * imported: BullMQ and ioredis (a Redis URL), pg (a PostgreSQL URL), nodemailer (a mail relay). A SQLite instance
 * starts without parsing them — about a quarter of the import's CPU (docs/decisions.md, "Installing").
 */
import type * as BullMQ from 'bullmq'
import type * as IORedis from 'ioredis'
import type * as Nodemailer from 'nodemailer'
import type * as PG from 'pg'
import { loadServerPackage } from './packages.js'

/** bullmq's exports (Queue, Worker, DelayedError …). */
export const bullmq = (): typeof BullMQ => loadServerPackage('bullmq') as typeof BullMQ
/** ioredis's exports (Redis). */
export const ioredis = (): typeof IORedis => loadServerPackage('ioredis') as typeof IORedis
/** pg's exports (Pool, Client). */
export const pgModule = (): typeof PG => loadServerPackage('pg') as typeof PG
/** nodemailer's exports (createTransport). */
export const nodemailer = (): typeof Nodemailer => loadServerPackage('nodemailer') as typeof Nodemailer
