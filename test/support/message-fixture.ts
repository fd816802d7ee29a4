import type { Message } from '../../src/inbox/core/message.js';

/** A stored received message for unit tests of what is built from one (wire answers, event payloads); spread and override. */
export const messageFixture: Message = {
  pk: 1,
  organizationId: 'org',
  inboxId: 'agent@x.test',
  threadId: '0190a1b2-0000-7000-8000-000000000001',
  messageId: '<1@x.test>',
  labels: ['received', 'unread'],
  timestamp: '2026-11-21T10:00:00.000Z',
  from: 'Sender <s@y.test>',
  replyTo: ['r@y.test'],
  to: ['agent@x.test'],
  cc: [],
  bcc: [],
  subject: 'Hello',
  preview: 'Hi there',
  text: null,
  html: null,
  inReplyTo: null,
  references: [],
  headers: null,
  attachments: [],
  size: 512,
  createdAt: '2026-11-21T10:00:00.000Z',
  updatedAt: '2026-11-21T10:00:01.000Z',
};
