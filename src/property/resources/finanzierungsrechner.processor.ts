import { darlehensbetrag, tilgungsplan } from '../calculator/annuitaet.js';
import { eur, sign, toCents } from '../calculator/money.js';
import type { Item, Processor } from '../engine/define.js';
import { ConstraintViolationError, violation, type Violation } from '../engine/errors.js';

/**
 * The financing calculation (non-persisted): the price is the one given, else the price of the
 * referenced property (which the caller must be allowed to see); the loan is price − equity;
 * the plan comes from calculator/annuitaet.ts. Nothing is stored.
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
  const plan = tilgungsplan({
    betrag: eur(toCents(betrag)),
    zinssatz: input.zinssatz as number,
    tilgungssatz: input.tilgungssatz as number,
    zinsbindungJahre,
  });
  const result: Record<string, unknown> = {
    id: 0,
    kaufpreis,
    eigenkapital,
    zinssatz: input.zinssatz,
    tilgungssatz: input.tilgungssatz,
    zinsbindungJahre,
    darlehensbetrag: eur(toCents(betrag)),
    monatsrate: plan.monatsrate,
    tilgungsplan: plan.jahre,
    restschuldNachZinsbindung: plan.restschuldNachZinsbindung,
    abbezahltImJahr: plan.abbezahltImJahr ?? null,
    laufzeitMonate: plan.laufzeitMonate ?? null,
  };
  return result as Item;
};
