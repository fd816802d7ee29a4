import { hashSecret, newSecret, systemIds } from '../../platform/ids.js';
import type { Processor } from '../engine/define.js';

/** Prefix of every property-service API key, so a leaked key is recognisable. */
export const API_KEY_PREFIX = 'prop_';

export function generateApiKey(): { key: string; hash: string } {
  const key = newSecret(systemIds, API_KEY_PREFIX, 32);
  return { key, hash: hashSecret(key) };
}

/** Registration: stores only the hash of a fresh API key and returns the key once. */
export const registerUser: Processor = async (input, _ctx, persist) => {
  const { key, hash } = generateApiKey();
  const item = await persist({ values: input, extraColumns: { api_key_hash: hash } });
  return { ...item, apiKey: key };
};
