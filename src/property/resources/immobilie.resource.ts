import {
  SCHEMA_NAME,
  authenticated,
  dateFilter,
  defineResource,
  existsFilter,
  f,
  orderFilter,
  propertyFilter,
  rangeFilter,
  searchFilter,
} from '../engine/define.js';
import { seesAllProperties } from '../security/roles.js';
import { withKaufkosten } from './immobilie.provider.js';

const EUR = { type: 'number', minimum: 0 } as const;

export const IMMOBILIEN_TYP = ['wohnung', 'haus', 'grundstueck', 'gewerbe', 'buero'] as const;

/**
 * A property record. Every authenticated account manages its own; admin and moderator see and
 * edit all of them. Another account's property is outside the caller's scope and answers 404.
 */
export const Immobilie = defineResource({
  shortName: 'Immobilie',
  description: 'A property record (areas in square metres, price in euros).',
  path: '/api/immobilies',
  table: 'immobilie',
  fields: {
    id: f.id(),
    verwalter: f.ref('User', {
      column: 'verwalter_id',
      required: true,
      onDelete: 'cascade',
      description: 'Manager of the record; defaults to the caller. Only admin and moderator may name someone else.',
      default: ({ principal }) => principal?.id,
      keepOnReplace: true,
      writeAccess: ({ principal, value }) => seesAllProperties(principal) || value === principal?.id,
    }),
    adresse: f.string({
      required: true,
      maxLength: 255,
      iri: SCHEMA_NAME,
      description: 'Free-text address',
      example: 'Lindenweg 4, 04109 Leipzig',
    }),
    wohnflaeche: f.number({ minimum: 0, maximum: 1e9, description: 'Living area in m²', example: 92.5 }),
    nutzflaeche: f.number({ minimum: 0, maximum: 1e9, description: 'Usable area in m²', example: 15 }),
    zimmer: f.integer({ minimum: 0, maximum: 10_000, description: 'Number of rooms', example: 4 }),
    typ: f.enumOf(IMMOBILIEN_TYP, { required: true, description: 'Kind of property (ImmobilienTyp)' }),
    kaufpreis: f.number({ minimum: 0, maximum: 1e15, description: 'Purchase price in EUR', example: 420000 }),
    kaltmiete: f.number({
      minimum: 0,
      maximum: 1e12,
      description: 'Monthly cold rent (Kaltmiete) in EUR, actual or expected; for the rental yield',
      example: 1250,
    }),
    bundesland: f.ref('Bundesland', { column: 'bundesland_id', required: true, description: 'Federal state' }),
    heizungstyp: f.ref('Heizungstyp', { column: 'heizungstyp_id', description: 'Heating type' }),
    createdAt: f.timestamp('created', {
      column: 'created_at',
      description: 'When the record was created (set by the server)',
    }),
    updatedAt: f.timestamp('updated', {
      column: 'updated_at',
      description: 'When the record was last written (set by the server)',
    }),
    preisProQuadratmeter: f.computed('number', {
      description:
        'Computed: kaufpreis / wohnflaeche in EUR per m², rounded half up to the cent; absent without kaufpreis or wohnflaeche (or when wohnflaeche is 0)',
      example: 4540.54,
    }),
    grunderwerbsteuer: f.computed('number', {
      description:
        "Computed: real estate transfer tax in EUR, kaufpreis × the state's grunderwerbsteuerSatz, rounded half up to the cent; absent without kaufpreis or rate",
      example: 23100,
    }),
    kaufnebenkosten: f.computed('object', {
      description:
        'Computed: purchase costs besides the price, in EUR, each line rounded half up to the cent: transfer tax, notary and land registry at the configured percentages, broker commission (absent when none is configured), and their sum (absent without the tax); absent without kaufpreis',
      schema: {
        type: 'object',
        properties: {
          grunderwerbsteuer: { ...EUR, description: 'Transfer tax (absent without the state rate)' },
          notar: { ...EUR, description: 'Notary fees (PROPERTY_NOTAR_PERCENT of the price)' },
          grundbuch: { ...EUR, description: 'Land registry fees (PROPERTY_GRUNDBUCH_PERCENT of the price)' },
          makler: {
            ...EUR,
            description: 'Broker commission (PROPERTY_MAKLER_PERCENT of the price); absent when that is 0',
          },
          summe: { ...EUR, description: 'Sum of the lines above (absent without the transfer tax)' },
        },
        required: ['notar', 'grundbuch'],
      },
      example: { grunderwerbsteuer: 23100, notar: 6300, grundbuch: 2100, makler: 14994, summe: 46494 },
    }),
    gesamtkosten: f.computed('number', {
      description: 'Computed: kaufpreis + kaufnebenkosten.summe in EUR; absent when the sum is',
      example: 466494,
    }),
    bruttomietrendite: f.computed('number', {
      description:
        'Computed: gross rental yield in percent, 12 × kaltmiete / kaufpreis × 100, rounded half up to two decimals; absent without kaltmiete or kaufpreis (or when kaufpreis is 0)',
      example: 3.57,
    }),
    kaufpreisfaktor: f.computed('number', {
      description:
        'Computed: price-to-rent factor, kaufpreis / (12 × kaltmiete), rounded half up to two decimals; absent without kaltmiete or kaufpreis (or when kaltmiete is 0)',
      example: 28,
    }),
  },
  operations: {
    getCollection: { security: authenticated, provider: withKaufkosten },
    get: { security: authenticated, provider: withKaufkosten },
    post: { security: authenticated, provider: withKaufkosten },
    put: { security: authenticated, provider: withKaufkosten },
    patch: { security: authenticated, provider: withKaufkosten },
    delete: { security: authenticated },
  },
  filters: [
    ...searchFilter({
      typ: 'exact',
      bundesland: 'exact',
      heizungstyp: 'exact',
      verwalter: 'exact',
      adresse: 'ipartial',
    }),
    ...rangeFilter('kaufpreis', 'wohnflaeche', 'nutzflaeche', 'zimmer', 'preisProQuadratmeter'),
    ...dateFilter('createdAt', 'updatedAt'),
    ...existsFilter('heizungstyp', 'wohnflaeche', 'nutzflaeche', 'zimmer', 'kaufpreis'),
    ...orderFilter(
      'id',
      'kaufpreis',
      'wohnflaeche',
      'zimmer',
      'nutzflaeche',
      'adresse',
      'typ',
      'preisProQuadratmeter',
      'createdAt',
      'updatedAt',
    ),
    ...propertyFilter(),
  ],
  // Price per m² in SQL for filters and ordering (its output field is the calculator's).
  derived: { preisProQuadratmeter: { kind: 'number', ratio: ['kaufpreis', 'wohnflaeche'] } },
  countedBy: 'verwalter',
  links: [{ path: '/api/users/{id}/immobilies', from: 'User', toField: 'verwalter' }],
  scope: (principal) => (seesAllProperties(principal) ? null : { verwalter: principal?.id ?? -1 }),
});
