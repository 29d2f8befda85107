/**
 * Allow/block lists of an org (scope `lists`; docs/lists-and-velocity.md "In the service"): POST and GET /v1/lists,
 * GET and DELETE /v1/lists/{id}, POST and GET /v1/lists/{id}/items, POST /v1/lists/{id}/items/remove and
 * DELETE /v1/lists/{id}/items/{value}.
 *
 * Lists belong to the org and the key's mode: a list of another org, or of the other mode, is NOT_FOUND. Values are
 * normalised as the library normalises them (src/lists/normalize.ts); a call adding items adds every valid value in
 * one transaction and names each invalid one with its reason (it is not refused for them). Every change applies
 * from the next lookup, on every instance.
 */
import { Type } from '@sinclair/typebox'
import { foreignCursor, RiskcheckError } from '../../errors.js'
import { instantOfText } from '../../instant.js'
import { itemReasonProblem, listNameProblem, MAX_ITEM_REASON, MAX_ITEMS_PER_LIST, MAX_LIST_NAME, MAX_LISTS } from '../../lists/compile.js'
import { MAX_VALUE_LENGTH, normalizeListValue } from '../../lists/normalize.js'
import { LIST_ITEM_TYPES, LIST_KINDS, type ListItemType } from '../../lists/types.js'
import type { RequestAuth } from '../auth.js'
import type { ListItemRecord, ListOwner, ListRecord } from '../store/contracts/lists.js'
import { listRoom, MAX_ITEMS_PER_OWNER, MAX_VALUES_PER_CALL, prepareValues } from '../org-lists.js'
import { encodePageCursor, valueOfPageCursor, type PageScope } from '../page-cursor.js'
import { QueryInteger } from '../query-integer.js'
import { Text } from '../text.js'
import { BULK_BODY_LIMIT } from './bulk.js'
import { defineRoute, type RouteDef, type ServerContext } from './types.js'

/** Most lists of one org in one mode. */
export const MAX_LISTS_PER_OWNER = Math.min(100, MAX_LISTS)

const ownerOf = (auth: RequestAuth | undefined): ListOwner => ({ orgId: auth!.orgId, mode: auth!.mode })

function storeOf(ctx: ServerContext) {
  if (!ctx.lists) throw new RiskcheckError('UPSTREAM_UNAVAILABLE', 'Lists need the SQLite or PostgreSQL store; this server runs without one.')
  return ctx.lists
}

const count = (n: number) => n.toLocaleString('en-US')
const notFound = (id: string) => new RiskcheckError('NOT_FOUND', `No list ${JSON.stringify(id.slice(0, 64))}.`)

/** The list `id` of the caller and `values` normalised for it: at most MAX_VALUES_PER_CALL, another owner's list 404. */
async function listValues(ctx: ServerContext, auth: RequestAuth | undefined, id: string, values: string[]) {
  const store = storeOf(ctx)
  const owner = ownerOf(auth)
  if (values.length > MAX_VALUES_PER_CALL)
    throw new RiskcheckError('INPUT_LIMIT_EXCEEDED', `At most ${MAX_VALUES_PER_CALL} values in one call (got ${values.length}).`, { field: 'values' })
  const list = await store.getList(owner, id)
  if (!list) throw notFound(id)
  return { store, owner, list, ...prepareValues(list.itemType, values) }
}
const iso = (ms: number) => new Date(ms).toISOString()

const ListSchema = Type.Object(
  {
    id: Type.String({ pattern: '^lst_' }),
    name: Type.String(),
    kind: Type.Union(LIST_KINDS.map((k) => Type.Literal(k))),
    item_type: Type.Union(LIST_ITEM_TYPES.map((t) => Type.Literal(t))),
    items: Type.Integer({ description: 'Items stored (expired ones included until removed).' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
const ListItemSchema = Type.Object(
  {
    value: Type.String({ description: 'The normalised value.' }),
    reason: Type.Union([Type.String(), Type.Null()]),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'From then on it no longer matches.' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
)
const listView = (l: ListRecord) => ({ id: l.id, name: l.name, kind: l.kind, item_type: l.itemType, items: l.items, created_at: iso(l.createdAt) })
const itemView = (i: ListItemRecord) => ({
  value: i.value,
  reason: i.reason,
  expires_at: i.expiresAt === null ? null : iso(i.expiresAt),
  created_at: iso(i.createdAt),
})

const Id = Type.Object({ id: Text({ minLength: 1, maxLength: 100, description: 'The list id (lst_…).' }) }, { additionalProperties: false })
const IdValue = Type.Object(
  {
    id: Text({ minLength: 1, maxLength: 100, description: 'The list id (lst_…).' }),
    value: Type.String({ minLength: 1, maxLength: MAX_VALUE_LENGTH * 3, description: 'The value (URL-encoded; normalised before it is looked up).' }),
  },
  { additionalProperties: false },
)

/** Body of POST /v1/lists. */
export const ListCreateBody = Type.Object(
  {
    name: Text({ minLength: 1, maxLength: MAX_LIST_NAME, description: `1 to ${MAX_LIST_NAME} characters, not only spaces.` }),
    kind: Type.Union(LIST_KINDS.map((k) => Type.Literal(k)), { description: 'block: a match blocks; allow: a match approves unless a block list matches.' }),
    item_type: Type.Union(LIST_ITEM_TYPES.map((t) => Type.Literal(t)), { description: 'What the items are (docs/lists-and-velocity.md "Item types").' }),
  },
  { additionalProperties: false },
)

/** Body of POST /v1/lists/{id}/items. */
export const ListItemsBody = Type.Object(
  {
    values: Type.Array(Type.String(), { minItems: 1, description: `1 to ${MAX_VALUES_PER_CALL.toLocaleString('en-US')} values (more → 413 INPUT_LIMIT_EXCEEDED).` }),
    reason: Type.Optional(Type.Union([Text({ maxLength: MAX_ITEM_REASON }), Type.Null()], { description: 'Why they are listed (shown in the verdict reason of a block match).' })),
    expires_at: Type.Optional(
      Type.Union([Type.String({ maxLength: 40 }), Type.Null()], {
        description: 'An ISO 8601 date-time with `Z` or an offset (2026-12-31T23:59:59Z), from which they no longer match.',
      }),
    ),
  },
  { additionalProperties: false },
)

const AddResult = Type.Object(
  {
    added: Type.Integer(),
    already_present: Type.Integer({ description: 'Values already on the list (or given twice): left as they were.' }),
    invalid: Type.Array(Type.Object({ value: Type.String(), message: Type.String() }, { additionalProperties: false }), {
      description: 'Each value that could not be used, with why (the valid ones were added all the same).',
    }),
  },
  { additionalProperties: false },
)

/** Body of POST /v1/lists/{id}/items/remove. */
export const ListRemoveBody = Type.Object(
  { values: Type.Array(Type.String(), { minItems: 1, description: `1 to ${MAX_VALUES_PER_CALL.toLocaleString('en-US')} values (more → 413 INPUT_LIMIT_EXCEEDED).` }) },
  { additionalProperties: false },
)
const RemoveResult = Type.Object(
  {
    removed: Type.Integer(),
    not_present: Type.Integer({ description: 'Valid values that were not on the list (or given twice).' }),
    invalid: Type.Array(Type.Object({ value: Type.String(), message: Type.String() }, { additionalProperties: false })),
  },
  { additionalProperties: false },
)

const ItemsPage = Type.Object(
  { success: Type.Literal(true), data: Type.Array(ListItemSchema), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
)
const ItemsQuery = Type.Object(
  {
    limit: Type.Optional(QueryInteger(1, 1000, 'Page size, 1 to 1000 (default 100).')),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'The next_cursor of the previous page.' })),
    value: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_VALUE_LENGTH, description: 'Look this value up (normalised first).' })),
  },
  { additionalProperties: false },
)

/** The compared form of one value of the list, or 400 INVALID_REQUEST naming why it is not one. */
function normalizedOrRefuse(type: ListItemType, raw: string, field: string): string {
  const n = normalizeListValue(type, raw)
  if (!n.ok) throw new RiskcheckError('INVALID_REQUEST', `\`${field}\`: ${JSON.stringify(raw.slice(0, 100))} is ${n.reason}.`, { field })
  return n.value
}

/** What a page of the list's items is read under: a cursor of another list, org, mode or `value` is refused. */
const itemsScope = (owner: ListOwner, id: string, value: string | undefined): PageScope => ({ listing: `list_items ${id}`, ...owner, filters: { value } })

/** The value a cursor continues after: a value of the list's item type in its normalised form, as the pages give them. */
function valueOfCursor(cursor: string, type: ListItemType, scope: PageScope): string {
  const value = valueOfPageCursor(cursor, scope)
  const n = normalizeListValue(type, value)
  if (!n.ok || n.value !== value) throw foreignCursor()
  return value
}

/** The expiry of a POST items body in unix ms (null: none), or 400: a date-time with its offset, read alike everywhere. */
function expiryOf(v: string | null | undefined): number | null {
  if (v === undefined || v === null) return null
  const ms = v.includes('T') ? instantOfText(v) : null
  if (ms === null) throw new RiskcheckError('INVALID_REQUEST', '`expires_at` must be an ISO 8601 date-time with Z or an offset (2026-12-31T23:59:59Z).', { field: 'expires_at' })
  return ms
}

/** 400 INVALID_REQUEST for a name or reason the lists cannot hold (the compiler's rule: it would leave them out). */
function refuseField(field: 'name' | 'reason', problem: string | null): void {
  if (problem !== null) throw new RiskcheckError('INVALID_REQUEST', `\`${field}\` ${problem}.`, { field })
}

const tags = ['Lists']

/** The list routes. */
export const listRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    url: '/v1/lists',
    operationId: 'create_list',
    summary: 'Create an allow or block list',
    description: `A list of the org in the key's mode (test and live keys see separate lists); at most ${MAX_LISTS_PER_OWNER} per mode.`,
    tags,
    scope: 'lists',
    status: 201,
    body: ListCreateBody,
    response: { name: 'List', schema: ListSchema },
    errors: [],
    handler: async ({ body, auth, ctx }) => {
      refuseField('name', listNameProblem(body.name))
      const store = storeOf(ctx)
      const owner = ownerOf(auth)
      if ((await store.listLists(owner)).length >= MAX_LISTS_PER_OWNER)
        throw new RiskcheckError('INVALID_REQUEST', `At most ${MAX_LISTS_PER_OWNER} lists may exist; delete one first.`)
      return listView(await store.createList(owner, { name: body.name, kind: body.kind, itemType: body.item_type }, ctx.nowMs()))
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/lists',
    operationId: 'list_lists',
    summary: "The org's lists in the key's mode, oldest first, with their item counts",
    tags,
    scope: 'lists',
    status: 200,
    response: Type.Array(ListSchema),
    errors: [],
    handler: async ({ auth, ctx }) => (await storeOf(ctx).listLists(ownerOf(auth))).map(listView),
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/lists/:id',
    operationId: 'get_list',
    summary: 'A list with its item count',
    tags,
    scope: 'lists',
    status: 200,
    params: Id,
    response: { name: 'List', schema: ListSchema },
    errors: ['NOT_FOUND'],
    handler: async ({ params, auth, ctx }) => {
      const l = await storeOf(ctx).getList(ownerOf(auth), params.id)
      if (!l) throw notFound(params.id)
      return listView(l)
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/v1/lists/:id',
    operationId: 'delete_list',
    summary: 'Delete a list and its items',
    tags,
    scope: 'lists',
    status: 200,
    params: Id,
    response: { name: 'DeletedList', schema: Type.Object({ id: Type.String(), deleted: Type.Boolean() }, { additionalProperties: false }) },
    errors: ['NOT_FOUND'],
    handler: async ({ params, auth, ctx }) => {
      if (!(await storeOf(ctx).deleteList(ownerOf(auth), params.id))) throw notFound(params.id)
      return { id: params.id, deleted: true }
    },
  }),
  ...itemRoutes(),
]

function itemRoutes(): RouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/lists/:id/items',
      operationId: 'add_list_items',
      summary: 'Add values to a list',
      description:
        `Values are normalised as the list's item type says; every valid one is added in one transaction, each invalid one is named in \`invalid\` with why (the call is not refused for them). A value already on the list keeps its reason and expiry. A list holds at most ${count(MAX_ITEMS_PER_LIST)} items and the lists of an org at most ${count(MAX_ITEMS_PER_OWNER)} together in each mode: a call whose valid values (counted as given) would pass either is refused whole with 413 INPUT_LIMIT_EXCEEDED, its message naming the limit.`,
      tags,
      scope: 'lists',
      status: 200,
      params: Id,
      body: ListItemsBody,
      bodyLimit: BULK_BODY_LIMIT,
      response: { name: 'ListItemsAdded', schema: AddResult },
      errors: ['NOT_FOUND', 'INPUT_LIMIT_EXCEEDED'],
      handler: async ({ params, body, auth, ctx }) => {
        const expiresAt = expiryOf(body.expires_at)
        refuseField('reason', itemReasonProblem(body.reason))
        const { store, owner, valid, invalid } = await listValues(ctx, auth, params.id, body.values)
        const reason = body.reason ? body.reason : null
        // the limits are checked in the adding transaction (413 INPUT_LIMIT_EXCEEDED, nothing added)
        const r = await store.addItems(owner, params.id, valid.map((value) => ({ value, reason, expiresAt })), ctx.nowMs(), listRoom)
        if (!r) throw notFound(params.id)
        return { added: r.added, already_present: r.alreadyPresent, invalid }
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/lists/:id/items/remove',
      operationId: 'remove_list_items',
      summary: 'Remove values from a list',
      description: 'Values are normalised first; all those on the list are removed in one transaction, each invalid one is named in `invalid`. For values of any length (a path segment holds at most 100 characters).',
      tags,
      scope: 'lists',
      status: 200,
      params: Id,
      body: ListRemoveBody,
      bodyLimit: BULK_BODY_LIMIT,
      response: { name: 'ListItemsRemoved', schema: RemoveResult },
      errors: ['NOT_FOUND', 'INPUT_LIMIT_EXCEEDED'],
      handler: async ({ params, body, auth, ctx }) => {
        const { store, owner, valid, invalid } = await listValues(ctx, auth, params.id, body.values)
        const unique = [...new Set(valid)]
        const removed = await store.removeItems(owner, params.id, unique)
        if (removed === null) throw notFound(params.id)
        return { removed, not_present: valid.length - removed, invalid }
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/lists/:id/items',
      operationId: 'list_list_items',
      summary: 'The items of a list in value order, or one value',
      description:
        '`?value=` looks one value up (normalised first): a page of that item, or empty. A `cursor` is taken only on the list and with the `value` of the page that gave it, else 400 INVALID_REQUEST (Conventions, Pages).',
      tags,
      scope: 'lists',
      status: 200,
      envelope: false,
      params: Id,
      query: ItemsQuery,
      response: { name: 'ListItemsPage', schema: ItemsPage },
      errors: ['NOT_FOUND'],
      handler: async ({ params, query, auth, ctx }) => {
        const store = storeOf(ctx)
        const owner = ownerOf(auth)
        const list = await store.getList(owner, params.id)
        if (!list) throw notFound(params.id)
        const value = query.value === undefined ? undefined : normalizedOrRefuse(list.itemType, query.value, 'value')
        const scope = itemsScope(owner, params.id, value)
        const page = await store.listItems(owner, params.id, {
          after: query.cursor === undefined ? null : valueOfCursor(query.cursor, list.itemType, scope),
          limit: query.limit === undefined ? 100 : Number(query.limit),
          ...(value !== undefined ? { value } : {}),
        })
        if (!page) throw notFound(params.id)
        return { success: true as const, data: page.items.map(itemView), next_cursor: page.next === null ? null : encodePageCursor(page.next, scope) }
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/lists/:id/items/:value',
      operationId: 'delete_list_item',
      summary: 'Remove one value from a list',
      description: 'The value is normalised first (`Jane.Doe@Gmail.com` removes `janedoe@gmail.com`); URL-encode it (`203.0.113.0%2F24`).',
      tags,
      scope: 'lists',
      status: 200,
      params: IdValue,
      response: { name: 'DeletedListItem', schema: Type.Object({ value: Type.String(), deleted: Type.Boolean() }, { additionalProperties: false }) },
      errors: ['NOT_FOUND'],
      handler: async ({ params, auth, ctx }) => {
        const store = storeOf(ctx)
        const owner = ownerOf(auth)
        const list = await store.getList(owner, params.id)
        if (!list) throw notFound(params.id)
        const value = normalizedOrRefuse(list.itemType, params.value, 'value')
        const gone = await store.removeItem(owner, params.id, value)
        if (gone === null) throw notFound(params.id)
        if (!gone) throw new RiskcheckError('NOT_FOUND', `${JSON.stringify(value.slice(0, 100))} is not on the list.`)
        return { value, deleted: true }
      },
    }),
  ]
}
