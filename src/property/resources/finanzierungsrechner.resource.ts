import { authenticated, defineResource, f } from '../engine/define.js';
import { computeFinanzierung } from './finanzierungsrechner.processor.js';

const EUR = { type: 'number', minimum: 0 } as const;

/** A schedule row (a year or a month) in the OpenAPI document. */
const row = (key: Record<string, unknown>) => ({
  type: 'object',
  properties: { ...key, zinsen: EUR, tilgung: EUR, sondertilgung: EUR, restschuld: EUR },
  required: [...Object.keys(key), 'zinsen', 'tilgung', 'sondertilgung', 'restschuld'],
});

const SUMMEN = {
  type: 'object',
  properties: { zinsen: EUR, tilgung: EUR, sondertilgung: EUR, zahlungen: EUR },
  required: ['zinsen', 'tilgung', 'sondertilgung', 'zahlungen'],
} as const;

/**
 * A financing calculation (annuity loan): computed from the posted inputs and answered at once
 * (200), never stored: a resource without a table, served by its processor (see decision 0014).
 * Any account may use it; a property given by IRI must be one the caller may see.
 */
export const Finanzierungsrechner = defineResource({
  shortName: 'Finanzierungsrechner',
  description:
    'A financing calculation for an annuity loan, computed from the posted inputs and not stored: monthly payment (from the repayment rate or a desired payment), interest, repayment and special repayments per year (and per month on request), remaining debt after the fixed-rate period, the sums to its end and over the whole term, the fee-free effective rate and the year the loan is paid off.',
  path: '/api/finanzierungsrechners',
  table: null,
  fields: {
    kaufpreis: f.number({
      minimum: 0,
      maximum: 1e15,
      description: 'Purchase price in EUR; when absent, the price of `immobilie`',
      example: 420000,
    }),
    immobilie: f.input('ref', {
      target: 'Immobilie',
      description: 'A property whose kaufpreis is used when kaufpreis is absent (input only)',
    }),
    eigenkapital: f.number({
      required: true,
      minimum: 0,
      maximum: 1e15,
      description: 'Equity in EUR; the loan is kaufpreis − eigenkapital',
      example: 100000,
    }),
    zinssatz: f.number({
      required: true,
      minimum: 0,
      maximum: 100,
      description: 'Nominal interest rate in percent per year',
      example: 3.8,
    }),
    tilgungssatz: f.number({
      minimum: 0.01,
      maximum: 100,
      description: 'Initial repayment rate in percent per year; give this or wunschrate',
      example: 2,
    }),
    wunschrate: f.number({
      minimum: 0.01,
      maximum: 1e15,
      description: "Desired monthly payment in EUR, instead of tilgungssatz; must be above the first month's interest",
      example: 1600,
    }),
    zinsbindungJahre: f.integer({
      required: true,
      minimum: 1,
      maximum: 50,
      description: 'Fixed-rate period (Zinsbindung) in years',
      example: 10,
    }),
    anschlusszins: f.number({
      minimum: 0,
      maximum: 100,
      description:
        'Interest rate in percent per year after the fixed-rate period (Anschlusszins), with the same monthly payment; absent: zinssatz stays',
      example: 4.5,
    }),
    sondertilgung: f.number({
      minimum: 0,
      maximum: 1e15,
      description:
        'Special repayment (Sondertilgung) in EUR per year, paid with the last monthly payment of each loan year from sondertilgungAbJahr on',
      example: 5000,
    }),
    sondertilgungAbJahr: f.integer({
      minimum: 1,
      maximum: 100,
      description: 'The first loan year with a special repayment (default 1)',
      example: 1,
    }),
    sondertilgungMaxProzent: f.number({
      minimum: 0,
      maximum: 100,
      description:
        'Cap of the yearly special repayment in percent of the loan, as loan contracts set it (e.g. 5); absent: no cap',
      example: 5,
    }),
    monatlich: f.input('boolean', {
      description: 'true: the answer has the monthly schedule `monatsplan` besides the yearly one (input only)',
    }),
    darlehensbetrag: f.computed('number', {
      description: 'Loan amount in EUR (kaufpreis − eigenkapital)',
      example: 320000,
    }),
    monatsrate: f.computed('number', {
      description: 'Monthly payment in EUR: loan × (zinssatz + tilgungssatz) / 12, rounded half up to the cent',
      example: 1546.67,
    }),
    anfaenglicheTilgung: f.computed('number', {
      description:
        'Initial repayment rate in percent per year: tilgungssatz, or the one the wunschrate implies ((12 × monatsrate / loan) − zinssatz, rounded half up to two decimals)',
      example: 2,
    }),
    effektivzinsOhneGebuehren: f.computed('number', {
      description:
        "Effective annual rate in percent by the fee-free formula (1 + zinssatz/12)^12 − 1, rounded half up to two decimals; a lender's quoted effective rate also counts fees and can be higher",
      example: 3.87,
    }),
    tilgungsplan: f.computed('array', {
      description:
        'Per loan year: interest paid, principal repaid out of the monthly payments, special repayment and the debt left at its end (EUR; monthly interest rounded half up to the cent), until the loan is paid off (at most 100 years; after the fixed period the anschlusszins, else the same rate, with the same monthly payment)',
      schema: { type: 'array', items: row({ jahr: { type: 'integer', minimum: 1 } }) },
    }),
    monatsplan: f.computed('array', {
      description:
        'Only when `monatlich` is true: the same schedule per monthly payment (monat 1 = the first payment; the special repayment is in the last month of its year)',
      schema: {
        type: 'array',
        items: row({ monat: { type: 'integer', minimum: 1 }, jahr: { type: 'integer', minimum: 1 } }),
      },
    }),
    restschuldNachZinsbindung: f.computed('number', {
      description: 'Remaining debt in EUR at the end of the fixed-rate period',
      example: 243211.55,
    }),
    abbezahltImJahr: f.computed('integer', {
      description:
        'The loan year (1 = the first twelve payments) in which the loan is paid off; absent when it is not within 100 years',
      example: 28,
    }),
    laufzeitMonate: f.computed('integer', {
      description: 'Number of monthly payments until the loan is paid off; absent when it is not within 100 years',
      example: 331,
    }),
    summenZinsbindung: f.computed('object', {
      description:
        'Sums in EUR over the fixed-rate period: interest, repayment out of the monthly payments, special repayments and all payments (their sum); the exact sums of the schedule rows',
      schema: SUMMEN,
      example: { zinsen: 117194.45, tilgung: 106805.95, sondertilgung: 0, zahlungen: 224000.4 },
    }),
    summenGesamt: f.computed('object', {
      description:
        'The same sums over the whole term until the loan is paid off (or the 100-year horizon); tilgung + sondertilgung is the loan when it is paid off',
      schema: SUMMEN,
      example: { zinsen: 190778.48, tilgung: 350000, sondertilgung: 0, zahlungen: 540778.48 },
    }),
  },
  operations: {
    post: {
      security: authenticated,
      processor: computeFinanzierung,
      description: 'Computes a financing plan from the posted inputs; answers 200 with the result and stores nothing.',
    },
  },
});
