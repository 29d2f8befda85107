/** Ids of the service's allow/block lists, the same on every engine. */
import { randomBytes } from 'node:crypto'

/** A new list id: `lst_` and 16 hex digits. */
export const newListId = (): string => `lst_${randomBytes(8).toString('hex')}`
