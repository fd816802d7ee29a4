import {
  add,
  eur,
  exact,
  fromCents,
  multiply,
  percent,
  power,
  subtract,
  toCents,
  toHundredths,
  type Fraction,
} from './money.js';

/** Yearly special repayments (Sondertilgung) as German loan contracts allow them. */
export interface Sondertilgung {
  /** EUR per year, paid with the last payment of each loan year from `abJahr` on (≥ 0). */
  readonly betrag: number;
  /** The first loan year with a special repayment (1 = the end of the first twelve payments). */
  readonly abJahr: number;
  /** Cap per year in percent of the original loan (contracts allow e.g. 5 %); absent: no cap. */
  readonly maxProzent?: number;
}

export interface Darlehen {
  /** Loan amount in EUR (> 0). */
  readonly betrag: number;
  /** Nominal interest rate (Sollzins), percent per year, for the fixed-rate period. */
  readonly zinssatz: number;
  /** Initial repayment rate, percent per year (> 0); give this or `wunschrate`. */
  readonly tilgungssatz?: number;
  /** Desired monthly payment in EUR, instead of `tilgungssatz`. */
  readonly wunschrate?: number;
  /** Fixed-rate period (Zinsbindung) in whole years. */
  readonly zinsbindungJahre: number;
  /** Interest rate after the fixed-rate period (Anschlusszins), percent; absent: `zinssatz` stays. */
  readonly anschlusszins?: number;
  readonly sondertilgung?: Sondertilgung;
}

/** One row of the schedule: a month or a loan year. `tilgung` is the repayment out of the monthly payments. */
export interface Zeile {
  readonly zinsen: number;
  readonly tilgung: number;
  readonly sondertilgung: number;
  readonly restschuld: number;
}

export interface Jahr extends Zeile {
  readonly jahr: number;
}

export interface Monat extends Zeile {
  /** Payment number, 1 = the first monthly payment. */
  readonly monat: number;
  readonly jahr: number;
}

/** Sums over a span of the schedule; `zahlungen` = zinsen + tilgung + sondertilgung. */
export interface Summen {
  readonly zinsen: number;
  readonly tilgung: number;
  readonly sondertilgung: number;
  readonly zahlungen: number;
}

export interface Tilgungsplan {
  readonly monatsrate: number;
  /** The initial repayment rate in percent: the one given, or the one a Wunschrate implies (two decimals). */
  readonly anfaenglicheTilgung: number;
  /** Effective annual rate without fees: (1 + zinssatz/12)^12 − 1, in percent, two decimals. */
  readonly effektivzinsOhneGebuehren: number;
  readonly jahre: readonly Jahr[];
  readonly monate: readonly Monat[];
  readonly restschuldNachZinsbindung: number;
  readonly summenZinsbindung: Summen;
  readonly summenGesamt: Summen;
  /** The loan year (1 = the first twelve payments) in which the debt reaches zero; absent beyond the horizon. */
  readonly abbezahltImJahr?: number;
  readonly laufzeitMonate?: number;
}

/** Years simulated at most: a loan not repaid by then has no payoff year. */
export const HORIZONT_JAHRE = 100;

const ZWOELFTEL: Fraction = { num: 1n, den: 12n };

/** The monthly payment for a loan: the Wunschrate, else loan × (interest + repayment) / 12, to the cent. */
export function monatsrate(darlehen: Darlehen): bigint {
  if (darlehen.wunschrate !== undefined) return toCents(exact(darlehen.wunschrate));
  const satz = add(percent(darlehen.zinssatz), percent(darlehen.tilgungssatz ?? 0));
  return toCents(multiply(exact(darlehen.betrag), multiply(satz, ZWOELFTEL)));
}

/** The interest of the first month in cents: a Wunschrate must be above it, or the loan is never repaid. */
export function ersterMonatszins(darlehen: Darlehen): bigint {
  return toCents(multiply(exact(darlehen.betrag), multiply(percent(darlehen.zinssatz), ZWOELFTEL)));
}

/**
 * The effective annual rate of a loan with monthly interest and no fees (PAngV without costs):
 * (1 + nominal/12)^12 − 1, in percent, rounded half up to two decimals. Fees, a disagio or
 * insurance that a lender's quoted effective rate includes are not known here, so a lender's
 * figure can be higher.
 */
export function effektivzinsOhneGebuehren(zinssatz: number): number {
  const monat = add({ num: 1n, den: 1n }, multiply(percent(zinssatz), ZWOELFTEL));
  return eur(toHundredths(multiply(subtract(power(monat, 12), { num: 1n, den: 1n }), { num: 100n, den: 1n })));
}

/**
 * An annuity loan as German banks compute it: the monthly payment (loan × (interest rate + initial
 * repayment rate) / 12, or the Wunschrate) is rounded half up to the cent and stays fixed; each
 * month the interest is balance × rate / 12 (exact, then rounded half up to the cent), the rest
 * of the payment repays the debt, and the last payment is only what is left. A Sondertilgung is
 * paid with the last payment of each loan year from its first year on, at most its cap and the
 * debt left. After the fixed-rate period the Anschlusszins (or the same rate) applies with the
 * same monthly payment, to find the payoff year. All amounts are whole cents throughout, so every
 * sum is the exact sum of its rows.
 */
export function tilgungsplan(darlehen: Darlehen): Tilgungsplan {
  const betrag = toCents(exact(darlehen.betrag));
  const zinsBindung = multiply(percent(darlehen.zinssatz), ZWOELFTEL);
  const zinsDanach =
    darlehen.anschlusszins === undefined ? zinsBindung : multiply(percent(darlehen.anschlusszins), ZWOELFTEL);
  const rate = monatsrate(darlehen);
  const sonder = darlehen.sondertilgung;
  const sonderProJahr =
    sonder === undefined
      ? 0n
      : sonder.maxProzent === undefined
        ? toCents(exact(sonder.betrag))
        : minimum(toCents(exact(sonder.betrag)), toCents(multiply(fromCents(betrag), percent(sonder.maxProzent))));
  const bindungMonate = darlehen.zinsbindungJahre * 12;

  let rest = betrag;
  let restNachBindung: bigint | undefined;
  let abbezahltImJahr: number | undefined;
  let laufzeitMonate: number | undefined;
  const jahre: Jahr[] = [];
  const monate: Monat[] = [];
  const bindung = new RunningSums();
  const gesamt = new RunningSums();
  let stalled = false;
  for (let jahr = 1; jahr <= HORIZONT_JAHRE && rest > 0n && !stalled; jahr++) {
    const imJahr = new RunningSums();
    for (let m = 1; m <= 12 && rest > 0n; m++) {
      const monat = (jahr - 1) * 12 + m;
      const zins = toCents(multiply(fromCents(rest), monat <= bindungMonate ? zinsBindung : zinsDanach));
      const anteil = minimum(rate - zins, rest);
      if (anteil <= 0n) {
        stalled = true; // the payment does not even cover the interest: never repaid
        break;
      }
      rest -= anteil;
      const extra = m === 12 && sonder !== undefined && jahr >= sonder.abJahr ? minimum(sonderProJahr, rest) : 0n;
      rest -= extra;
      imJahr.add(zins, anteil, extra);
      gesamt.add(zins, anteil, extra);
      if (monat <= bindungMonate) bindung.add(zins, anteil, extra);
      monate.push({
        monat,
        jahr,
        zinsen: eur(zins),
        tilgung: eur(anteil),
        sondertilgung: eur(extra),
        restschuld: eur(rest),
      });
      if (monat === bindungMonate) restNachBindung = rest;
      if (rest === 0n) {
        abbezahltImJahr = jahr;
        laufzeitMonate = monat;
      }
    }
    if (imJahr.count > 0) jahre.push({ jahr, ...imJahr.wire(), restschuld: eur(rest) });
  }
  // Repaid (or stalled) before the fixed period ends: the debt then is what is left now.
  restNachBindung ??= rest;
  const anfaenglicheTilgung =
    darlehen.tilgungssatz !== undefined && darlehen.wunschrate === undefined
      ? darlehen.tilgungssatz
      : eur(toHundredths(subtract({ num: rate * 1200n, den: betrag }, exact(darlehen.zinssatz))));
  const plan: { -readonly [K in keyof Tilgungsplan]: Tilgungsplan[K] } = {
    monatsrate: eur(rate),
    anfaenglicheTilgung,
    effektivzinsOhneGebuehren: effektivzinsOhneGebuehren(darlehen.zinssatz),
    jahre,
    monate,
    restschuldNachZinsbindung: eur(restNachBindung),
    summenZinsbindung: bindung.wireSummen(),
    summenGesamt: gesamt.wireSummen(),
  };
  if (abbezahltImJahr !== undefined) plan.abbezahltImJahr = abbezahltImJahr;
  if (laufzeitMonate !== undefined) plan.laufzeitMonate = laufzeitMonate;
  return plan;
}

const minimum = (a: bigint, b: bigint): bigint => (a < b ? a : b);

/**
 * Running sums in cents. A class, not an object literal with a `get count()`: such a literal,
 * made in a function, gets a V8 map of its own for every call (docs/decisions/0056).
 */
class RunningSums {
  private zinsen = 0n;
  private tilgung = 0n;
  private sondertilgung = 0n;
  private added = 0;

  get count(): number {
    return this.added;
  }

  add(z: bigint, t: bigint, s: bigint): void {
    this.zinsen += z;
    this.tilgung += t;
    this.sondertilgung += s;
    this.added++;
  }

  wire() {
    return { zinsen: eur(this.zinsen), tilgung: eur(this.tilgung), sondertilgung: eur(this.sondertilgung) };
  }

  wireSummen(): Summen {
    return {
      zinsen: eur(this.zinsen),
      tilgung: eur(this.tilgung),
      sondertilgung: eur(this.sondertilgung),
      zahlungen: eur(this.zinsen + this.tilgung + this.sondertilgung),
    };
  }
}

/** Loan amount = price − equity, in exact EUR; negative or zero means no loan is needed. */
export function darlehensbetrag(kaufpreis: number, eigenkapital: number): Fraction {
  return subtract(exact(kaufpreis), exact(eigenkapital));
}
