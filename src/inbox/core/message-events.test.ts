import { describe, expect, it } from 'vitest';
import type { Message } from './message.js';
import { toMessageResponse } from './message.wire.js';
import { receivedPayload } from './message-events.js';
import { messageFixture } from '../../../test/support/message-fixture.js';

const base: Message = messageFixture;

const LIMIT = 1024 * 1024;

/** The rule the payload keeps to, measured the slow way: the whole message's JSON within 1 MB, else no bodies. */
function expected(m: Message) {
  const wire = toMessageResponse(m);
  if (Buffer.byteLength(JSON.stringify(wire)) <= LIMIT) return wire;
  const { text: _t, html: _h, extracted_text: _et, extracted_html: _eh, ...rest } = wire;
  return rest;
}

describe('the message of a message.received payload', () => {
  it.each([
    ['small text and html', { text: 'hello', html: '<p>hello</p>' }],
    ['text of 200,000 four-byte characters (under a quarter of the limit in units)', { text: '😀'.repeat(100_000) }],
    ['ASCII text that fits with its extracted copy', { text: 'a'.repeat(400_000) }],
    ['ASCII text that does not fit with its extracted copy', { text: 'a'.repeat(600_000) }],
    ['text of two-byte characters between a quarter and the whole limit', { text: 'ü'.repeat(300_000) }],
    [
      'text and html longer than the limit together',
      { text: 'a'.repeat(600_000), html: `<p>${'b'.repeat(600_000)}</p>` },
    ],
    ['html alone longer than the limit', { html: `<p>${'ä'.repeat(LIMIT)}</p>` }],
    ['text exactly at the limit in units', { text: 'x'.repeat(LIMIT) }],
  ])('%s: bodies kept exactly when the whole message fits 1 MB', (_name, bodies) => {
    const message: Message = { ...base, ...bodies };
    const payload = receivedPayload(message);
    expect(payload).toEqual(expected(message));
    // Same keys in the same order as the wire message (webhook receivers see identical JSON).
    expect(Object.keys(payload)).toEqual(Object.keys(expected(message)));
  });
});
