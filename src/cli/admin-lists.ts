/**
 * `riskcheck admin list …`: an org's allow/block lists (docs/lists-and-velocity.md "In the service"), on the
 * server's database; the running servers apply a change from the org's next request.
 *
 *   admin list create --org ORG_ID --name NAME --kind block|allow --type ITEM_TYPE [--mode live|test]
 *   admin list show --org ORG_ID [LIST_ID] [--limit N] [--mode live|test]   the lists, or one list with its first items
 *   admin list add LIST_ID --org ORG_ID [VALUE …] [--file FILE|-] [--reason R] [--expires ISO] [--mode live|test]
 *   admin list remove LIST_ID --org ORG_ID VALUE … [--mode live|test]
 *   admin list delete LIST_ID --org ORG_ID [--mode live|test]
 */
import { readFile } from 'node:fs/promises'
import { LIST_ITEM_TYPES, LIST_KINDS, type ListItemType, type ListKind } from '../lists/types.js'
import { normalizeListValue } from '../lists/normalize.js'
import { instantOfText } from '../instant.js'
import { itemReasonProblem, listNameProblem } from '../lists/compile.js'
import { RiskcheckError } from '../errors.js'
import { listRoom, MAX_VALUES_PER_CALL, prepareValues } from '../server/org-lists.js'
import { listsStoreOf } from '../server/store/open-storage.js'
import type { ListOwner, ListRecord, ListsStore } from '../server/store/contracts/lists.js'
import type { Store } from '../server/store/contracts/store.js'
import { textProblem } from '../server/text.js'
import { UsageError, wholeNumber } from './shared.js'

interface AdminOutput {
  json: unknown
  text: string
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const listView = (l: ListRecord) => ({ id: l.id, name: l.name, kind: l.kind, item_type: l.itemType, items: l.items, created_at: iso(l.createdAt) })
const listLine = (l: ReturnType<typeof listView>) => `${l.id}  ${l.kind}  ${l.item_type}  ${l.items} items  ${l.name}`

function flag(values: Record<string, unknown>, name: string): string {
  const v = values[name]
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`)
  return v
}

/** The values of a file (or stdin's text): one a line; blank lines and lines starting with # are skipped. */
export function valuesOfText(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

async function valuesOf(positionals: string[], values: Record<string, unknown>): Promise<string[]> {
  const out = [...positionals]
  if (values.file !== undefined) {
    const file = flag(values, 'file')
    const text = file === '-' ? String(values['stdin-text'] ?? '') : await readFile(file, 'utf8').catch((e: Error) => {
      throw new UsageError(`cannot read ${file}: ${e.message}`)
    })
    out.push(...valuesOfText(text))
  }
  return out
}

/** Runs `admin list ACTION`; `org` throws (exit 1) when the org does not exist. */
export async function runAdminList(
  store: Store,
  action: string,
  positionals: string[],
  values: Record<string, unknown>,
  nowMs: number,
  org: (id: string) => Promise<unknown>,
): Promise<AdminOutput> {
  const lists = listsStoreOf(store)
  if (!lists) throw new UsageError('lists need the SQLite or PostgreSQL store')
  const mode = (values.mode as string | undefined) ?? 'live'
  if (mode !== 'live' && mode !== 'test') throw new UsageError('--mode must be live or test')
  const owner: ListOwner = { orgId: flag(values, 'org'), mode }
  await org(owner.orgId)
  const [id, ...rest] = positionals
  const listOf = async (): Promise<ListRecord> => {
    if (!id) throw new UsageError('expected a LIST_ID')
    const l = await lists.getList(owner, id)
    if (!l) throw new RangeError(`no ${mode} list ${id} of org ${owner.orgId}`)
    return l
  }
  switch (action) {
    case 'create':
      return create(lists, owner, values, nowMs)
    case 'show': {
      if (!id) {
        const all = (await lists.listLists(owner)).map(listView)
        return { json: all, text: all.map(listLine).join('\n') || `(no ${mode} lists)` }
      }
      const l = listView(await listOf())
      const limit = wholeNumber('limit', values.limit, 1) ?? 100
      const page = await lists.listItems(owner, l.id, { after: null, limit: Math.min(limit, 10_000) })
      const items = (page?.items ?? []).map((i) => ({ value: i.value, reason: i.reason, expires_at: iso(i.expiresAt), created_at: iso(i.createdAt) }))
      const lines = items.map((i) => `  ${i.value}${i.reason ? `  (${i.reason})` : ''}${i.expires_at ? `  expires ${i.expires_at}` : ''}`)
      return { json: { ...l, first_items: items }, text: [listLine(l), ...lines, ...(page?.next ? ['  …'] : [])].join('\n') }
    }
    case 'add': {
      const l = await listOf()
      const raw = await valuesOf(rest, values)
      if (raw.length === 0) throw new UsageError('give values as arguments or with --file FILE (- for standard input)')
      if (raw.length > MAX_VALUES_PER_CALL * 10) throw new UsageError(`at most ${MAX_VALUES_PER_CALL * 10} values at once`)
      const expires = values.expires === undefined ? null : instantOfText(flag(values, 'expires'))
      if (values.expires !== undefined && expires === null)
        throw new UsageError('--expires must be an ISO 8601 date (2026-12-31, UTC) or date-time with Z or an offset (2026-12-31T23:59:59Z)')
      const reason = typeof values.reason === 'string' && values.reason !== '' ? values.reason : null
      const tooLong = reason === null ? null : itemReasonProblem(reason)
      const reasonProblem = reason === null ? null : tooLong ? `\`--reason\` ${tooLong}.` : textProblem('--reason', reason)
      if (reasonProblem) throw new UsageError(reasonProblem)
      const { valid, invalid } = prepareValues(l.itemType, raw)
      const r = await lists
        .addItems(owner, l.id, valid.map((value) => ({ value, reason, expiresAt: expires })), nowMs, listRoom)
        .catch((e: unknown) => {
          throw e instanceof RiskcheckError && e.code === 'INPUT_LIMIT_EXCEEDED' ? new UsageError(e.message) : e
        })
      if (!r) throw new RangeError(`no ${mode} list ${l.id}`)
      const json = { added: r.added, already_present: r.alreadyPresent, invalid }
      // every invalid value, as the JSON and the API name them: a long file's typos are not cut to the first few
      const bad = invalid.map((i) => `  invalid ${JSON.stringify(i.value)}: ${i.message}`)
      return { json, text: [`${r.added} added, ${r.alreadyPresent} already present, ${invalid.length} invalid`, ...bad].join('\n') }
    }
    case 'remove': {
      const l = await listOf()
      if (rest.length === 0) throw new UsageError('give the values to remove')
      // every value is checked before any is removed: an invalid one refuses the command with nothing changed
      const normalized = rest.map((v) => ({ v, n: normalizeListValue(l.itemType, v) }))
      const bad = normalized.flatMap(({ v, n }) => (n.ok ? [] : [`${JSON.stringify(v)} is ${n.reason}`]))
      if (bad.length > 0) throw new UsageError(`${bad.join('; ')} (nothing was removed)`)
      const out: Array<{ value: string; removed: boolean }> = []
      for (const { n } of normalized) if (n.ok) out.push({ value: n.value, removed: (await lists.removeItem(owner, l.id, n.value)) === true })
      return { json: out, text: out.map((o) => `${o.value}  ${o.removed ? 'removed' : 'not on the list'}`).join('\n') }
    }
    case 'delete': {
      const l = await listOf()
      await lists.deleteList(owner, l.id)
      // the command closes the store when it ends: a large list's items go before it does, not at the next opening
      await lists.emptied?.()
      return { json: { id: l.id, deleted: true }, text: `${l.id} deleted (${l.items} items)` }
    }
    default:
      throw new UsageError(`unknown admin command "list ${action}" (see riskcheck admin --help)`)
  }
}

async function create(lists: ListsStore, owner: ListOwner, values: Record<string, unknown>, nowMs: number): Promise<AdminOutput> {
  const kind = flag(values, 'kind')
  const type = flag(values, 'type')
  if (!(LIST_KINDS as readonly string[]).includes(kind)) throw new UsageError(`--kind must be one of ${LIST_KINDS.join(', ')}`)
  if (!(LIST_ITEM_TYPES as readonly string[]).includes(type)) throw new UsageError(`--type must be one of ${LIST_ITEM_TYPES.join(', ')}`)
  const name = flag(values, 'name')
  const nameProblem = listNameProblem(name)
  const problem = nameProblem ? `\`--name\` ${nameProblem}.` : textProblem('--name', name)
  if (problem) throw new UsageError(problem)
  const l = listView(await lists.createList(owner, { name, kind: kind as ListKind, itemType: type as ListItemType }, nowMs))
  return { json: l, text: listLine(l) }
}
