import { Bundesland } from './bundesland.resource.js';
import { Finanzierungsrechner } from './finanzierungsrechner.resource.js';
import { Heizungstyp } from './heizungstyp.resource.js';
import { Immobilie } from './immobilie.resource.js';
import { User } from './user.resource.js';

/** Every resource of the property service, in entrypoint order. */
export const resources = [Immobilie, Bundesland, Heizungstyp, User, Finanzierungsrechner] as const;
