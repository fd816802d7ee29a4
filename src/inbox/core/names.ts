import { ValidationError } from '../../platform/errors/app-error.js';

/** Names people give things (pods, keys): trimmed, 1 to NAME_MAX characters. */

const NAME_MAX = 255;

export function checkName(name: string | undefined, field = 'name'): string | undefined {
  if (name === undefined) return undefined;
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > NAME_MAX)
    throw new ValidationError(`${field} must be 1-${NAME_MAX} characters.`, field, 'INVALID_NAME');
  return trimmed;
}
