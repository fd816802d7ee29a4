import { AppError, NotFoundError, ValidationError } from '../../platform/errors/app-error.js';

export class ListEntryNotFoundError extends NotFoundError {
  constructor(entry: string) {
    super(`No list entry ${entry} in this list.`, { code: 'LIST_ENTRY_NOT_FOUND', details: { entry } });
  }
}

/** Organization-level lists for a key limited to a pod or an inbox: not in its scope. */
export class ListNotFoundError extends NotFoundError {
  constructor() {
    super('No such list in the scope of this API key.', { code: 'LIST_NOT_FOUND' });
  }
}

export class InvalidListEntryError extends ValidationError {
  constructor(entry: string, why: string) {
    super(`entry: ${JSON.stringify(entry.slice(0, 100))} ${why}`, 'entry', 'INVALID_LIST_ENTRY');
  }
}

export class InvalidListPathError extends ValidationError {
  constructor(field: 'direction' | 'type', value: string, allowed: readonly string[]) {
    super(
      `${field}: ${JSON.stringify(value.slice(0, 50))} is not one of ${allowed.join(', ')}.`,
      field,
      field === 'direction' ? 'INVALID_DIRECTION' : 'INVALID_LIST_TYPE',
    );
  }
}

export class ListEntryExistsError extends AppError {
  constructor(entry: string) {
    super('conflict', `The list holds ${entry} already.`, { code: 'LIST_ENTRY_EXISTS', details: { entry } });
  }
}

/** Where an enforced rule lives: the level, the list and the entry (or the allow list the address is missing from). */
export interface ListRule {
  readonly level: 'organization' | 'pod' | 'inbox';
  readonly direction: 'send' | 'receive' | 'reply';
  readonly listType: 'allow' | 'block';
  /** The matching block entry; absent when the address is missing from an allow list. */
  readonly entry?: string;
}

export function describeRule(rule: ListRule): string {
  const list = `the ${rule.level}'s ${rule.direction} ${rule.listType} list`;
  return rule.listType === 'block' ? `${list} (entry ${rule.entry})` : `${list}, which does not name it`;
}

/** A send to a recipient the send lists refuse: 400 naming the recipient and the rule. */
export class RecipientBlockedError extends AppError {
  constructor(recipient: string, rule: ListRule) {
    super('validation', `Recipient ${recipient} is refused by ${describeRule(rule)}.`, {
      code: 'RECIPIENT_BLOCKED',
      details: {
        code: 'RECIPIENT_BLOCKED',
        recipient,
        level: rule.level,
        direction: rule.direction,
        list_type: rule.listType,
        ...(rule.entry !== undefined ? { entry: rule.entry } : {}),
      },
    });
  }
}
