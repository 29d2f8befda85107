/**
 * How many list items a server instance keeps compiled (./org-lists.ts), in a module of its own so that `serve` can
 * check its flag without loading the server.
 */

/**
 * Most list items an instance keeps compiled, all owners together (least recently used owners dropped first), by
 * default; `createServer({ listsCompiledItems })`, `serve --lists-compiled-items`. About 100 bytes an item.
 */
export const MAX_COMPILED_ITEMS = 4_000_000

/** The largest bound a server may be given (about 100 GB of compiled lists). */
export const MAX_COMPILED_ITEMS_LIMIT = 1_000_000_000
