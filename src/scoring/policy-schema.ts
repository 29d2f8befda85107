/**
 * The policy file format, defined once as a TypeBox schema: what `createPolicy` accepts (weights, effects,
 * thresholds, actions, rules, confidence, messages, contexts) plus `$schema` and `description`. The same definition
 * gives the published JSON Schema (`docs/policy.schema.json`, `riskcheck/policy.schema.json`, see
 * {@link policyJsonSchema}), the TypeScript shape, and — through ./policy-validate.ts — the validation of policy
 * files and of `createPolicy` overrides, with one plain-English message per kind of value ({@link messageOf}).
 *
 * What a JSON Schema cannot say (thresholds in order, rule conditions naming at least one factor, references to the
 * base policy's rules) is checked by ./policy-validate.ts.
 */
import { Type, type TSchema } from '@sinclair/typebox'
import { ACTIONS, CONTEXTS, RISK_LEVELS, VELOCITY_KINDS } from '../schema.js'
import { FACTORS, FACTOR_CODES } from './factors.js'
import { DEFAULT_POLICY } from './rules.js'

// Messages ride on the schema objects under symbol keys: TypeBox's copies (Optional, Array …) keep them, and the
// published JSON Schema (plain JSON) does not show them.
const MESSAGE = Symbol('riskcheck.policy.message')
const UNKNOWN_KEY = Symbol('riskcheck.policy.unknownKey')

/** Registers the message shown when a value does not fit `schema` (e.g. `must be a number from 0 to 100`). */
function say<T extends TSchema>(schema: T, message: string): T {
  ;(schema as unknown as Record<symbol, string>)[MESSAGE] = message
  return schema
}

/** The message for a value that does not fit `schema`, if one was registered. */
export function messageOf(schema: unknown): string | undefined {
  return schema !== null && typeof schema === 'object' ? (schema as Record<symbol, string | undefined>)[MESSAGE] : undefined
}

/** The message for an unknown key of the object `schema`, if one was registered (else a generic one is used). */
export function unknownKeyMessageOf(schema: unknown): string | undefined {
  return schema !== null && typeof schema === 'object' ? (schema as Record<symbol, string | undefined>)[UNKNOWN_KEY] : undefined
}

const literals = <T extends readonly string[]>(values: T, message: string, description?: string) =>
  say(Type.Union(values.map((v) => Type.Literal(v)), description ? { description } : {}), message)

const closed = <T extends Parameters<typeof Type.Object>[0]>(properties: T, options: { description?: string; unknownKey?: string } = {}) => {
  const schema = Type.Object(properties, {
    additionalProperties: false,
    ...(options.description ? { description: options.description } : {}),
  })
  if (options.unknownKey) (schema as unknown as Record<symbol, string>)[UNKNOWN_KEY] = options.unknownKey
  return say(schema, 'must be a mapping')
}

const WEIGHT_MESSAGE = 'must be a number from 0 to 100'
const weight = (description: string) => say(Type.Number({ minimum: 0, maximum: 100, description }), WEIGHT_MESSAGE)
const FACTOR_KEY = 'is not a factor code of the vocabulary (see "Factor vocabulary" in docs/scoring.md)'

/** A map keyed by factor code (every code optional, nothing else allowed). */
function factorMap(value: (code: (typeof FACTOR_CODES)[number]) => TSchema, description: string) {
  return closed(Object.fromEntries(FACTOR_CODES.map((c) => [c, Type.Optional(value(c))])), { description, unknownKey: FACTOR_KEY })
}

const FactorCodeSchema = literals(FACTOR_CODES, 'must be a factor code of the vocabulary')
const ActionSchema = literals(ACTIONS, `must be one of ${ACTIONS.join(', ')}`)
const EFFECTS = ['invalid', 'risky', 'unknown', 'info'] as const

const WeightsSchema = factorMap(
  (c) => weight(`${FACTORS[c].description} Default ${DEFAULT_POLICY.weights[c]}.`),
  'Risk points per factor (0–100); the score is the sum of the weights of the distinct fired factors, capped at 100.',
)

const ThresholdsSchema = closed(
  {
    medium: Type.Optional(weight(`Score from which the level is medium (default ${DEFAULT_POLICY.thresholds.medium}).`)),
    high: Type.Optional(weight(`Score from which the level is high (default ${DEFAULT_POLICY.thresholds.high}).`)),
    critical: Type.Optional(weight(`Score from which the level is critical (default ${DEFAULT_POLICY.thresholds.critical}).`)),
  },
  { description: 'Inclusive lower bounds of the levels above low; must satisfy medium <= high <= critical after merging.' },
)

const factorList = (description: string) => say(Type.Array(FactorCodeSchema, { description }), 'must be a list of factor codes')

const RuleSchema = closed(
  {
    name: say(Type.String({ minLength: 1, description: 'A name for people, tests and backtest reports.' }), 'must be a non-empty string'),
    when: closed(
      {
        all: Type.Optional(factorList('Every one of these factors fired.')),
        // an empty `any` could never match ("at least one of none"): refused rather than read as absent
        any: Type.Optional(
          say(Type.Array(FactorCodeSchema, { minItems: 1, description: 'At least one of these factors fired (one factor or more).' }), 'must be a list of one factor code or more'),
        ),
      },
      { description: 'The rule matches when every factor of `all` and (if given) at least one of `any` fired; at least one factor in all.' },
    ),
    action: ActionSchema,
    message: Type.Optional(say(Type.String({ description: 'Replaces the level’s recommendation message.' }), 'must be a string')),
  },
  { description: 'A hard rule: when it matches, its action replaces the level’s action.' },
)

const RuleRefSchema = say(
  Type.String({ minLength: 1, description: 'The name of a rule of the base policy (e.g. unusable_input_blocks), kept at this position.' }),
  'must name a rule of the base policy',
)

const RulesSchema = say(
  Type.Array(say(Type.Union([RuleRefSchema, RuleSchema]), 'must be a rule (a mapping with name, when, action) or the name of a base rule'), {
    description:
      'Replaces the base rules; tried in order, the first match wins. A string keeps the base rule of that name (the default policy has `unusable_input_blocks`).',
  }),
  'must be a list of rules',
)

const VELOCITY_SUBJECTS: Record<(typeof VELOCITY_KINDS)[number], string> = {
  ip: 'the same IP address',
  network: 'the same network (/24 for IPv4, /48 for IPv6)',
  email_domain: 'the same email domain (free providers are not counted)',
  email: 'the same normalised email address',
  phone: 'the same phone number',
}

const limit = (window: string) =>
  say(
    Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `Most checks in the last ${window} before the factor fires; null: no limit.` }),
    'must be a whole number ≥ 0 or null',
  )

const VelocitySchema = closed(
  Object.fromEntries(
    VELOCITY_KINDS.map((k) => [
      k,
      Type.Optional(
        closed(
          { hour: Type.Optional(limit('hour')), day: Type.Optional(limit('24 hours')) },
          { description: `Checks with ${VELOCITY_SUBJECTS[k]} (factor velocity_${k}_high); default hour ${DEFAULT_POLICY.velocity[k].hour}, day ${DEFAULT_POLICY.velocity[k].day}.` },
        ),
      ),
    ]),
  ),
  {
    description:
      'Velocity thresholds: a kind’s factor fires when more checks than this had the same value in the last hour or 24 hours (details.velocity). Merged window by window; a window set at the top level holds in every context, in place of the contexts’ defaults, and a context’s own window wins over it.',
    unknownKey: `is not a velocity kind (${VELOCITY_KINDS.join(', ')})`,
  },
)

const listAction = (kind: 'block' | 'allow', factor: string) =>
  say(
    Type.Union([...ACTIONS.map((a) => Type.Literal(a)), Type.Null()], {
      description: `Action of an answer on one of your ${kind} lists (factor ${factor}); default ${DEFAULT_POLICY.lists[kind]}; null: no action of its own.`,
    }),
    `must be one of ${ACTIONS.join(', ')} or null`,
  )

const OverlaySchema = (name: string) =>
  closed(
    {
      weights: Type.Optional(WeightsSchema),
      thresholds: Type.Optional(ThresholdsSchema),
      rules: Type.Optional(say(Type.Array(RuleSchema, { description: 'Tried before the base rules.' }), 'must be a list of rules')),
      velocity: Type.Optional(VelocitySchema),
    },
    { description: `Changes made when a combined check is judged for a ${name}.` },
  )

const levelMap = <T extends TSchema>(value: (level: string) => T, description: string) =>
  closed(Object.fromEntries(RISK_LEVELS.map((l) => [l, Type.Optional(value(l))])), { description })

/** The policy file: the overrides `createPolicy` takes, plus `$schema` and `description`. */
export const PolicyFileSchema = closed(
  {
    $schema: Type.Optional(say(Type.String({ description: 'Where editors find this schema.' }), 'must be a string')),
    description: Type.Optional(say(Type.String({ description: 'A note for people (not part of the version id).' }), 'must be a string')),
    weights: Type.Optional(WeightsSchema),
    effects: Type.Optional(
      factorMap(
        (c) => literals(EFFECTS, `must be one of ${EFFECTS.join(', ')}`, `Default ${DEFAULT_POLICY.effects[c]}.`),
        'Verdict effect per factor: invalid > risky > unknown > valid (info).',
      ),
    ),
    thresholds: Type.Optional(ThresholdsSchema),
    actions: Type.Optional(levelMap((l) => literals(ACTIONS, `must be one of ${ACTIONS.join(', ')}`, `Action of the ${l} level (default ${DEFAULT_POLICY.actions[l as 'low']}).`), 'Action per risk level.')),
    rules: Type.Optional(RulesSchema),
    confidence: Type.Optional(
      closed(
        {
          medium: Type.Optional(say(Type.Integer({ minimum: 1, description: 'Uncertain factors from which confidence is medium (default 1).' }), 'must be a whole number of at least 1')),
          low: Type.Optional(say(Type.Integer({ minimum: 1, description: 'Uncertain factors from which confidence is low (default 2).' }), 'must be a whole number of at least 1')),
        },
        { description: 'Confidence drops with the number of uncertain factors; must satisfy medium <= low.' },
      ),
    ),
    messages: Type.Optional(
      closed(Object.fromEntries(ACTIONS.map((a) => [a, Type.Optional(say(Type.String({ description: `Recommendation message of ${a}.` }), 'must be a string'))])), {
        description: 'Recommendation message per action (a rule may give its own).',
      }),
    ),
    contexts: Type.Optional(
      closed(Object.fromEntries(CONTEXTS.map((c) => [c, Type.Optional(OverlaySchema(c))])), {
        description: 'Replaces the overlay of each context named (combined check `context`).',
        unknownKey: `is not a context (${CONTEXTS.join(', ')})`,
      }),
    ),
    velocity: Type.Optional(VelocitySchema),
    lists: Type.Optional(
      closed(
        {
          block: Type.Optional(listAction('block', 'list_blocked')),
          allow: Type.Optional(listAction('allow', 'list_allowed')),
        },
        {
          description:
            'What your allow/block lists decide, before any rule: a block match first (so block wins), then an allow match (an unusable input is still blocked by the rule unusable_input_blocks while it is kept). null: the match only adds its factor’s weight, and rules may use the factor.',
        },
      ),
    ),
  },
  {
    description:
      'A riskcheck scoring policy: overrides of the default policy (see "Policies as files and backtesting" in docs/scoring.md). Every part is optional.',
  },
)

/** Rewrites `anyOf` of string constants as `enum` (shorter, and what editors complete best). */
function simplify(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(simplify)
  if (node === null || typeof node !== 'object') return node
  const o = node as Record<string, unknown>
  const anyOf = o.anyOf as Array<Record<string, unknown>> | undefined
  if (anyOf && anyOf.length > 0 && anyOf.every((m) => typeof m.const === 'string' && Object.keys(m).every((k) => k === 'const' || k === 'type'))) {
    const { anyOf: _, ...rest } = o
    return { type: 'string', enum: anyOf.map((m) => m.const), ...simplify(rest) as object }
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, simplify(v)]))
}

const plain = (schema: TSchema): unknown => simplify(JSON.parse(JSON.stringify(schema)))

/** Replaces every subtree equal to a definition with a `$ref` to it (the factor map appears four times …). */
function hoist(node: unknown, defs: ReadonlyMap<string, string>): unknown {
  if (node === null || typeof node !== 'object') return node
  const text = JSON.stringify(node)
  const name = defs.get(text)
  if (name !== undefined) return { $ref: `#/definitions/${name}` }
  if (Array.isArray(node)) return node.map((v) => hoist(v, defs))
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, hoist(v, defs)]))
}

/**
 * The published JSON Schema (draft-07) of policy files, generated from {@link PolicyFileSchema}. Editors use it for
 * completion and checking when a file names it in `$schema`; riskcheck's own check (`riskcheck policy check`) also
 * verifies what a schema cannot say (thresholds in order, rule references).
 */
export function policyJsonSchema(): Record<string, unknown> {
  const definitions = { weights: plain(WeightsSchema), thresholds: plain(ThresholdsSchema), rule: plain(RuleSchema), velocity: plain(VelocitySchema) }
  const byText = new Map(Object.entries(definitions).map(([name, d]) => [JSON.stringify(d), name]))
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'riskcheck scoring policy',
    ...(hoist(plain(PolicyFileSchema), byText) as Record<string, unknown>),
    definitions: Object.fromEntries(Object.entries(definitions).map(([name, d]) => [name, hoist(d, new Map([...byText].filter(([, n]) => n !== name)))])),
  }
}
