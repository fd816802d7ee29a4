import { buildRegistry, type RegistryOptions } from './engine/registry.js';
import { resources } from './resources/index.js';

export const PROPERTY_REGISTRY_OPTIONS: RegistryOptions = {
  prefix: '/api',
  title: 'Property Calculator Service API',
  description:
    'Property records (Immobilie), federal states (Bundesland), heating types (Heizungstyp) and users, in JSON-LD/Hydra.',
  version: '1.0.0',
};

export const propertyRegistry = buildRegistry(resources, PROPERTY_REGISTRY_OPTIONS);
