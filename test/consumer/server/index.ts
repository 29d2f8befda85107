// riskcheck/server's types: they include Fastify's, better-sqlite3's and pg's, which need Node.js types — the
// README's service install adds `@types/node` (and `"types": ["node"]` in tsconfig.json, which TypeScript 6 and
// later no longer imply), `@types/better-sqlite3` and `@types/pg`.
import { createMemoryStore, createServer, type ServerOptions } from 'riskcheck/server'

const options: ServerOptions = { db: createMemoryStore(), riskcheck: { mode: 'test' } }
const app = createServer(options)
await app.ready()
const res = await app.inject({ method: 'GET', url: '/healthz' })
await app.close()
console.log(JSON.stringify({ healthz: res.statusCode }))
