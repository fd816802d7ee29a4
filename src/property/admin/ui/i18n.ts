import polyglotI18nProvider from 'ra-i18n-polyglot';
import englishMessages from 'ra-language-english';

/**
 * react-admin's English texts (its buttons and notices), with German names for every resource and
 * field the API has: react-admin would otherwise singularize the URL segment ("immobilies" →
 * "Immobily") and turn field names into words ("grunderwerbsteuerSatz" → "Grunderwerbsteuer
 * satz"). Labels a page sets itself (immobilie.tsx, reference-data.tsx) win over these.
 */
const messages = {
  ...englishMessages,
  resources: {
    immobilies: {
      name: 'Immobilie |||| Immobilien',
      fields: {
        adresse: 'Adresse',
        typ: 'Typ',
        bundesland: 'Bundesland',
        heizungstyp: 'Heizungstyp',
        verwalter: 'Verwalter',
        wohnflaeche: 'Wohnfläche (m²)',
        nutzflaeche: 'Nutzfläche (m²)',
        zimmer: 'Zimmer',
        kaufpreis: 'Kaufpreis',
        kaltmiete: 'Kaltmiete (monatlich)',
        bruttomietrendite: 'Bruttomietrendite (%)',
        kaufpreisfaktor: 'Kaufpreisfaktor',
        preisProQuadratmeter: 'Preis pro m²',
        grunderwerbsteuer: 'Grunderwerbsteuer',
        kaufnebenkosten: 'Kaufnebenkosten',
        gesamtkosten: 'Gesamtkosten',
        createdAt: 'Angelegt',
        updatedAt: 'Geändert',
      },
    },
    bundeslands: {
      name: 'Bundesland |||| Bundesländer',
      fields: { name: 'Name', code: 'Kürzel', grunderwerbsteuerSatz: 'Grunderwerbsteuersatz (%)' },
    },
    heizungstyps: { name: 'Heizungstyp |||| Heizungstypen', fields: { name: 'Bezeichnung' } },
    users: {
      name: 'Benutzer |||| Benutzer',
      fields: { name: 'Name', email: 'E-Mail', role: 'Rolle', apiKey: 'API-Schlüssel' },
    },
    finanzierungsrechners: { name: 'Finanzierungsrechner |||| Finanzierungsrechner' },
  },
};

export const i18nProvider = polyglotI18nProvider(() => messages, 'en');
