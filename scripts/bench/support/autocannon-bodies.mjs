/**
 * autocannon POSTing a different JSON body with each request: the bodies in turn from the one at `start`, one list
 * shared by every connection (its CLI sends one body; with a list per connection each body would go out once per
 * connection). Run by ./server-load.ts in a process of its own: `node autocannon-bodies.mjs '{"url", "secret",
 * "file", "start", "connections", "seconds"}'`, `file` holding the bodies' JSON texts; prints autocannon's JSON summary.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const autocannon = require('autocannon')
const { url, secret, file, start, connections, seconds } = JSON.parse(process.argv[2])
const encoded = JSON.parse(readFileSync(file, 'utf8'))
let next = start

const result = await autocannon({
  url,
  connections,
  duration: seconds,
  method: 'POST',
  headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
  requests: [
    {
      setupRequest(req) {
        req.body = encoded[next++ % encoded.length]
        return req
      },
    },
  ],
})
process.stdout.write(JSON.stringify(result))
