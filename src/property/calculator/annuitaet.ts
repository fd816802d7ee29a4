import { add, eur, exact, fromCents, multiply, percent, subtract, toCents, type Fraction } from './money.js';

export interface Darlehen {
  /** Loan amount in EUR (> 0). */
  readonly betrag: number;
  /** Nominal interest rate, percent per year. */
  readonly zinssatz: number;
  /** Initial repayment rate, percent per year (> 0). */
  readonly tilgungssatz: number;
  /** Fixed-rate period in whole years. */
  readonly zinsbindungJahre: number;
}

export interface Jahr {
  readonly jahr: number;
  readonly zinsen: number;
  readonly tilgung: number;
  readonly restschuld: number;
}

export interface Tilgungsplan {
  readonly monatsrate: number;
  readonly jahre: readonly Jahr[];
  readonly restschuldNachZinsbindung: number;
  /** The loan year (1 = the first twelve payments) in which the debt reaches zero; absent beyond the horizon. */
  readonly abbezahltImJahr?: number;
  readonly laufzeitMonate?: number;
}

/** Years simulated at most: a loan not repaid by then has no payoff year. */
export const HORIZONT_JAHRE = 100;

/**
 * An annuity loan as German banks compute it: the monthly payment is loan × (interest rate +
 * initial repayment rate) / 12, rounded half up to the cent, and stays fixed; each month the
 * interest is balance × rate / 12 (exact, then rounded half up to the cent), the rest of the
 * payment repays the debt, and the last payment is only what is left. After the fixed-rate period
 * the same rate is assumed, to find the payoff year. All amounts are whole cents throughout.
 */
export function tilgungsplan(darlehen: Darlehen): Tilgungsplan {
  const betrag = toCents(exact(darlehen.betrag));
  const zwoelftel: Fraction = { num: 1n, den: 12n };
  const monatszins = multiply(percent(darlehen.zinssatz), zwoelftel);
  const monatsrate = toCents(
    multiply(fromCents(betrag), multiply(add(percent(darlehen.zinssatz), percent(darlehen.tilgungssatz)), zwoelftel)),
  );
  let rest = betrag;
  let restNachBindung = betrag;
  let abbezahltImJahr: number | undefined;
  let laufzeitMonate: number | undefined;
  const jahre: Jahr[] = [];
  for (let jahr = 1; jahr <= HORIZONT_JAHRE && rest > 0n; jahr++) {
    let zinsen = 0n;
    let tilgung = 0n;
    for (let monat = 1; monat <= 12 && rest > 0n; monat++) {
      const zins = toCents(multiply(fromCents(rest), monatszins));
      const anteil = monatsrate - zins > rest ? rest : monatsrate - zins;
      if (anteil <= 0n) break; // the payment does not even cover the interest: never repaid
      zinsen += zins;
      tilgung += anteil;
      rest -= anteil;
      if (rest === 0n) {
        abbezahltImJahr = jahr;
        laufzeitMonate = (jahr - 1) * 12 + monat;
      }
    }
    jahre.push({ jahr, zinsen: eur(zinsen), tilgung: eur(tilgung), restschuld: eur(rest) });
    if (jahr === darlehen.zinsbindungJahre) restNachBindung = rest;
    if (tilgung === 0n) break;
  }
  if (darlehen.zinsbindungJahre > jahre.length) restNachBindung = rest;
  const plan: { -readonly [K in keyof Tilgungsplan]: Tilgungsplan[K] } = {
    monatsrate: eur(monatsrate),
    jahre,
    restschuldNachZinsbindung: eur(restNachBindung),
  };
  if (abbezahltImJahr !== undefined) plan.abbezahltImJahr = abbezahltImJahr;
  if (laufzeitMonate !== undefined) plan.laufzeitMonate = laufzeitMonate;
  return plan;
}

/** Loan amount = price − equity, in exact EUR; negative or zero means no loan is needed. */
export function darlehensbetrag(kaufpreis: number, eigenkapital: number): Fraction {
  return subtract(exact(kaufpreis), exact(eigenkapital));
}
