import { HydraAdmin, ResourceGuesser, hydraDataProvider } from '@api-platform/admin';
import CalculateIcon from '@mui/icons-material/Calculate';
import { StrictMode } from 'react';
import { Resource } from 'react-admin';
import { createRoot } from 'react-dom/client';
import { apiKeyAuthProvider, httpClient } from './api-key.js';
import { FinanzierungsrechnerPage } from './finanzierungsrechner.js';
import { parseDocumentation } from './documentation.js';
import { i18nProvider } from './i18n.js';
import { LiveListGuesser } from './live-updates.js';
import { ImmobilieCreate, ImmobilieEdit, ImmobilieList, ImmobilieShow } from './immobilie.js';
import { LoginPage } from './login-page.js';
import { BundeslandList, BundeslandShow, UserList, UserShow } from './reference-data.js';

/**
 * The property service's admin: API Platform's HydraAdmin over this origin's API, signed in with
 * an API key. Everything it loads comes from this server: react-admin's telemetry ping is off
 * (`disableTelemetry`), no web fonts. The lists and the property pages update live through the
 * API's Mercure hub (live-updates.tsx); the data provider's own per-record Mercure stays off.
 */

const root = document.getElementById('root') as HTMLElement;
const entrypoint = new URL(root.dataset.entrypoint ?? '/api', window.location.href).href.replace(/\/+$/, '');

const dataProvider = hydraDataProvider({
  entrypoint,
  httpClient,
  apiDocumentationParser: parseDocumentation,
  mercure: false,
});

createRoot(root).render(
  <StrictMode>
    <HydraAdmin
      entrypoint={entrypoint}
      dataProvider={dataProvider}
      authProvider={apiKeyAuthProvider(entrypoint)}
      loginPage={LoginPage}
      i18nProvider={i18nProvider}
      requireAuth
      disableTelemetry
      title={root.dataset.title}
    >
      <ResourceGuesser
        name="immobilies"
        list={ImmobilieList}
        show={ImmobilieShow}
        edit={ImmobilieEdit}
        create={ImmobilieCreate}
        recordRepresentation="adresse"
      />
      <ResourceGuesser name="bundeslands" list={BundeslandList} show={BundeslandShow} />
      <ResourceGuesser name="heizungstyps" list={LiveListGuesser} />
      <ResourceGuesser name="users" list={UserList} show={UserShow} />
      {/* Not a list: the calculator's page (POST only; nothing to list, show or edit). */}
      <Resource
        name="finanzierungsrechners"
        icon={CalculateIcon}
        list={<FinanzierungsrechnerPage entrypoint={entrypoint} />}
      />
    </HydraAdmin>
  </StrictMode>,
);
