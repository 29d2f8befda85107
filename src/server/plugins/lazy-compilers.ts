/**
 * Fastify's own schema compilers (Ajv for requests, fast-json-stringify for responses), each route's schema compiled
 * at its first use rather than when the server starts: a process answers the routes it uses without first compiling
 * every route it has. Why: docs/decisions.md, "HTTP API" → "schemas compiled at first use".
 */
import { createRequire } from 'node:module'
import type { FastifyInstance } from 'fastify'

type Run = ((data: unknown) => unknown) & { errors?: unknown }
type Compile = (route: Record<string, unknown>) => Run
type Factory = (externalSchemas: unknown, options: unknown) => Compile

type Selector = () => Factory
let modules: { validator: Selector; serializer: Selector } | undefined
/** Fastify's compiler packages, loaded from Fastify's own place (its dependencies, whichever version it installed). */
function compilerModules(): { validator: Selector; serializer: Selector } {
  if (modules) return modules
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'))
  return (modules = { validator: fromFastify('@fastify/ajv-compiler') as Selector, serializer: fromFastify('@fastify/fast-json-stringify-compiler') as Selector })
}

/** The compilations a server has not done yet, by its Fastify instance. */
const pendingOf = new WeakMap<FastifyInstance, Set<() => void>>()

/** The compilers of one server: the `schemaController.compilersFactory` option of Fastify, and its pending work. */
export function createLazyCompilers(): { factory: { buildValidator: Factory; buildSerializer: Factory }; track(app: FastifyInstance): void } {
  const pending = new Set<() => void>()
  // as Fastify does, one selector of each per server (it keeps the compiler of the schemas it was last given)
  const selectors = { validator: compilerModules().validator(), serializer: compilerModules().serializer() }
  /** A function that compiles on its first call; a validator's `errors` are copied onto it (Fastify reads them there). */
  const lazy = (compile: () => Run, withErrors: boolean): Run => {
    let fn: Run | undefined
    const ensure = () => {
      pending.delete(ensure)
      fn ??= compile()
      return fn
    }
    pending.add(ensure)
    const run: Run = (data) => {
      const f = fn ?? ensure()
      const r = f(data)
      if (withErrors) run.errors = f.errors
      return r
    }
    return run
  }
  const wrap =
    (kind: 'validator' | 'serializer'): Factory =>
    (externalSchemas, options) => {
      const withErrors = kind === 'validator'
      const compile = selectors[kind](externalSchemas, options)
      return (route) => lazy(() => compile(route), withErrors)
    }
  return {
    factory: { buildValidator: wrap('validator'), buildSerializer: wrap('serializer') },
    track: (app) => void pendingOf.set(app, pending),
  }
}

/**
 * Compiles every schema of `app` not compiled yet and returns how many there were: what Fastify's own compilers do at
 * start, for a test that every route's schemas compile.
 */
export function compileAllSchemas(app: FastifyInstance): number {
  const pending = pendingOf.get(app)
  if (!pending) return 0
  const all = [...pending]
  for (const ensure of all) ensure()
  return all.length
}
