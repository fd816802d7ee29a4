import { authenticated, defineResource, f } from '../engine/define.js';
import { computeFinanzierung } from './finanzierungsrechner.processor.js';

const EUR = { type: 'number', minimum: 0 } as const;

/**
 * A financing calculation (annuity loan): computed from the posted inputs and answered at once
 * (200), never stored: a resource without a table, served by its processor (see decision 0014).
 * Any account may use it; a property given by IRI must be one the caller may see.
 */
export const Finanzierungsrechner = defineResource({
  shortName: 'Finanzierungsrechner',
  description:
    'A financing calculation for an annuity loan, computed from the posted inputs and not stored: monthly payment, interest and repayment per year, remaining debt after the fixed-rate period and the year the loan is paid off.',
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
      required: true,
      minimum: 0.01,
      maximum: 100,
      description: 'Initial repayment rate in percent per year',
      example: 2,
    }),
    zinsbindungJahre: f.integer({
      required: true,
      minimum: 1,
      maximum: 50,
      description: 'Fixed-rate period in years',
      example: 10,
    }),
    darlehensbetrag: f.computed('number', {
      description: 'Loan amount in EUR (kaufpreis − eigenkapital)',
      example: 320000,
    }),
    monatsrate: f.computed('number', {
      description: 'Monthly payment in EUR: loan × (zinssatz + tilgungssatz) / 12, rounded half up to the cent',
      example: 1546.67,
    }),
    tilgungsplan: f.computed('array', {
      description:
        'Per loan year: interest paid, principal repaid and the debt left at its end (EUR; monthly interest rounded half up to the cent), until the loan is paid off (at most 100 years; the rate is assumed to stay after the fixed period)',
      schema: {
        type: 'array',
        items: {
          type: 'object',
          properties: { jahr: { type: 'integer', minimum: 1 }, zinsen: EUR, tilgung: EUR, restschuld: EUR },
          required: ['jahr', 'zinsen', 'tilgung', 'restschuld'],
        },
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
  },
  operations: {
    post: {
      security: authenticated,
      processor: computeFinanzierung,
      description: 'Computes a financing plan from the posted inputs; answers 200 with the result and stores nothing.',
    },
  },
});
