import { darlehensbetrag, ersterMonatszins, monatsrate, tilgungsplan, type Darlehen } from '../calculator/annuitaet.js';
import { eur, sign, toCents } from '../calculator/money.js';
import type { Item, Processor } from '../engine/define.js';
import { ConstraintViolationError, violation, type Violation } from '../engine/errors.js';

const given = (v: unknown): v is number => typeof v === 'number';

/**
 * The financing calculation (non-persisted): the price is the one given, else the price of the
 * referenced property (which the caller must be allowed to see); the loan is price − equity;
 * the monthly payment comes from `tilgungssatz` or, instead, the `wunschrate`; the plan comes
 * from calculator/annuitaet.ts. Nothing is stored.
 */
export const computeFinanzierung: Processor = async (input, ctx) => {
  const violations: Violation[] = [];
  let kaufpreis = input.kaufpreis as number | null;
  const immobilieId = input.immobilie as number | null;
  if ((kaufpreis === null || kaufpreis === undefined) && immobilieId !== null && immobilieId !== undefined) {
    const property = (await ctx.read('Immobilie', [immobilieId])).get(immobilieId);
    if (!property)
      violations.push({
        ...violation('immobilie', 'type'),
        message: `Item not found for "/api/immobilies/${immobilieId}".`,
      });
    else if (typeof property.kaufpreis !== 'number')
      violations.push({ ...violation('kaufpreis', 'notNull'), message: 'The property has no kaufpreis: give one.' });
    else kaufpreis = property.kaufpreis;
  }
  const tilgungssatz = given(input.tilgungssatz) ? input.tilgungssatz : undefined;
  const wunschrate = given(input.wunschrate) ? input.wunschrate : undefined;
  if ((tilgungssatz === undefined) === (wunschrate === undefined))
    violations.push({
      ...violation('tilgungssatz', 'notNull'),
      message:
        tilgungssatz === undefined
          ? 'Give a tilgungssatz or a wunschrate.'
          : 'Give a tilgungssatz or a wunschrate, not both.',
    });
  if (violations.length) throw new ConstraintViolationError(violations);
  if (kaufpreis === null || kaufpreis === undefined)
    throw new ConstraintViolationError([
      { ...violation('kaufpreis', 'notNull'), message: 'Give a kaufpreis or an immobilie.' },
    ]);
  const eigenkapital = input.eigenkapital as number;
  const betrag = darlehensbetrag(kaufpreis, eigenkapital);
  if (sign(betrag) <= 0) {
    throw new ConstraintViolationError([
      {
        ...violation('eigenkapital', 'lessThanOrEqual', { compared_value: kaufpreis }),
        message: `This value should be less than ${kaufpreis} (the price): otherwise there is nothing to finance.`,
      },
    ]);
  }
  const zinsbindungJahre = input.zinsbindungJahre as number;
  const sondertilgung = given(input.sondertilgung) ? input.sondertilgung : undefined;
  const sondertilgungAbJahr = given(input.sondertilgungAbJahr) ? input.sondertilgungAbJahr : 1;
  const sondertilgungMaxProzent = given(input.sondertilgungMaxProzent) ? input.sondertilgungMaxProzent : undefined;
  const anschlusszins = given(input.anschlusszins) ? input.anschlusszins : undefined;
  const darlehen: Darlehen = {
    betrag: eur(toCents(betrag)),
    zinssatz: input.zinssatz as number,
    ...(tilgungssatz === undefined ? {} : { tilgungssatz }),
    ...(wunschrate === undefined ? {} : { wunschrate }),
    zinsbindungJahre,
    ...(anschlusszins === undefined ? {} : { anschlusszins }),
    ...(sondertilgung
      ? {
          sondertilgung: {
            betrag: sondertilgung,
            abJahr: sondertilgungAbJahr,
            ...(sondertilgungMaxProzent === undefined ? {} : { maxProzent: sondertilgungMaxProzent }),
          },
        }
      : {}),
  };
  if (wunschrate !== undefined && monatsrate(darlehen) <= ersterMonatszins(darlehen)) {
    const zins = eur(ersterMonatszins(darlehen));
    throw new ConstraintViolationError([
      {
        ...violation('wunschrate', 'greaterThanOrEqual', { compared_value: zins }),
        message: `This value should be greater than ${zins} (the first month's interest): otherwise the loan is never repaid.`,
      },
    ]);
  }
  const plan = tilgungsplan(darlehen);
  const result: Record<string, unknown> = {
    id: 0,
    kaufpreis,
    eigenkapital,
    zinssatz: input.zinssatz,
    tilgungssatz: tilgungssatz ?? null,
    wunschrate: wunschrate ?? null,
    zinsbindungJahre,
    anschlusszins: anschlusszins ?? null,
    sondertilgung: sondertilgung ?? null,
    sondertilgungAbJahr: sondertilgung === undefined ? null : sondertilgungAbJahr,
    sondertilgungMaxProzent: sondertilgungMaxProzent ?? null,
    darlehensbetrag: eur(toCents(betrag)),
    monatsrate: plan.monatsrate,
    anfaenglicheTilgung: plan.anfaenglicheTilgung,
    effektivzinsOhneGebuehren: plan.effektivzinsOhneGebuehren,
    tilgungsplan: plan.jahre,
    monatsplan: input.monatlich === true ? plan.monate : null,
    restschuldNachZinsbindung: plan.restschuldNachZinsbindung,
    summenZinsbindung: plan.summenZinsbindung,
    summenGesamt: plan.summenGesamt,
    abbezahltImJahr: plan.abbezahltImJahr ?? null,
    laufzeitMonate: plan.laufzeitMonate ?? null,
  };
  return result as Item;
};
