import { divide, eur, exact, multiply, percent, toCents, toHundredths } from './money.js';

/** The default cost percentages (of the purchase price) the service is configured with. */
export interface KostenSaetze {
  /** Notary fees, percent. */
  readonly notarProzent: number;
  /** Land registry fees (Grundbuch), percent. */
  readonly grundbuchProzent: number;
  /** Broker commission paid by the buyer, percent; 0 = no broker, and `makler` is absent. */
  readonly maklerProzent: number;
}

export interface Kaufnebenkosten {
  readonly grunderwerbsteuer?: number;
  readonly notar: number;
  readonly grundbuch: number;
  readonly makler?: number;
  readonly summe?: number;
}

export interface Kaufkosten {
  readonly preisProQuadratmeter?: number;
  readonly grunderwerbsteuer?: number;
  readonly kaufnebenkosten?: Kaufnebenkosten;
  readonly gesamtkosten?: number;
  readonly bruttomietrendite?: number;
  readonly kaufpreisfaktor?: number;
}

export interface Kaufdaten {
  /** EUR; absent → no cost is computed. */
  readonly kaufpreis?: number | null;
  /** m²; absent or zero → no price per m². */
  readonly wohnflaeche?: number | null;
  /** The state's transfer tax rate in percent; absent → no tax, no sum, no total. */
  readonly grunderwerbsteuerSatz?: number | null;
  /** Monthly cold rent in EUR; absent → no rental yield, no price-to-rent factor. */
  readonly kaltmiete?: number | null;
}

const present = (v: number | null | undefined): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * The purchase costs of a property. Every amount is computed exactly from the inputs and rounded
 * once, half up, to whole cents (see money.ts); the sum is the sum of the rounded lines, so it
 * always equals what a reader adds up, and the total is the price (in cents) plus that sum.
 * An absent input leaves exactly the results that depend on it absent, never NaN or Infinity.
 */
export function kaufkosten(input: Kaufdaten, saetze: KostenSaetze): Kaufkosten {
  const out: { -readonly [K in keyof Kaufkosten]: Kaufkosten[K] } = {};
  if (!present(input.kaufpreis)) return out;
  const preis = exact(input.kaufpreis);
  if (present(input.wohnflaeche)) {
    const proQm = divide(preis, exact(input.wohnflaeche));
    if (proQm) out.preisProQuadratmeter = eur(toCents(proQm));
  }
  const line = (prozent: number) => toCents(multiply(preis, percent(prozent)));
  const steuer = present(input.grunderwerbsteuerSatz) ? line(input.grunderwerbsteuerSatz) : undefined;
  const notar = line(saetze.notarProzent);
  const grundbuch = line(saetze.grundbuchProzent);
  const makler = saetze.maklerProzent > 0 ? line(saetze.maklerProzent) : undefined;
  const summe = steuer === undefined ? undefined : steuer + notar + grundbuch + (makler ?? 0n);
  // Built in output order: grunderwerbsteuer, notar, grundbuch, makler, summe.
  const nebenkosten: { -readonly [K in keyof Kaufnebenkosten]?: Kaufnebenkosten[K] } = {};
  if (steuer !== undefined) nebenkosten.grunderwerbsteuer = out.grunderwerbsteuer = eur(steuer);
  nebenkosten.notar = eur(notar);
  nebenkosten.grundbuch = eur(grundbuch);
  if (makler !== undefined) nebenkosten.makler = eur(makler);
  if (summe !== undefined) {
    nebenkosten.summe = eur(summe);
    out.gesamtkosten = eur(toCents(preis) + summe);
  }
  out.kaufnebenkosten = nebenkosten as Kaufnebenkosten;
  if (present(input.kaltmiete)) {
    // Gross rental yield = 12 × rent / price × 100 %; price-to-rent factor = price / (12 × rent).
    const jahresmiete = multiply(exact(input.kaltmiete), { num: 12n, den: 1n });
    const rendite = divide(multiply(jahresmiete, { num: 100n, den: 1n }), preis);
    if (rendite) out.bruttomietrendite = eur(toHundredths(rendite));
    const faktor = divide(preis, jahresmiete);
    if (faktor) out.kaufpreisfaktor = eur(toHundredths(faktor));
  }
  return out;
}
