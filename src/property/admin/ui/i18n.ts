import polyglotI18nProvider from 'ra-i18n-polyglot';
import englishMessages from 'ra-language-english';

/**
 * react-admin's English texts, with the German names of the resources: react-admin would
 * otherwise singularize the URL segment ("immobilies" → "Immobily").
 */
const messages = {
  ...englishMessages,
  resources: {
    immobilies: { name: 'Immobilie |||| Immobilien' },
    bundeslands: { name: 'Bundesland |||| Bundesländer' },
    heizungstyps: { name: 'Heizungstyp |||| Heizungstypen' },
    users: { name: 'User |||| Users' },
    finanzierungsrechners: { name: 'Finanzierungsrechner |||| Finanzierungsrechner' },
  },
};

export const i18nProvider = polyglotI18nProvider(() => messages, 'en');
