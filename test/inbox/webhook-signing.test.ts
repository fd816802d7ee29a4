import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { describe, expect, it } from 'vitest';
import { signatureHeaders } from '../../src/inbox/webhooks/webhook.client.js';

describe('webhook signing', () => {
  it('matches the test vector of the Svix documentation', () => {
    const headers = signatureHeaders(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(headers['svix-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    expect(headers).toMatchObject({
      'svix-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'svix-timestamp': '1614265330',
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
    });
  });

  it('signs the UTF-8 bytes of the body, as both libraries compute them', () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const body = JSON.stringify({ text: 'Grüße ✓ 🙂' });
    const at = new Date();
    const headers = signatureHeaders(secret, 'evt_1', Math.floor(at.getTime() / 1000), body);
    expect(headers['svix-signature']).toBe(new SvixWebhook(secret).sign('evt_1', at, body));
    expect(() =>
      new StandardWebhook(secret).verify(body, {
        'webhook-id': 'evt_1',
        'webhook-timestamp': headers['webhook-timestamp'] as string,
        'webhook-signature': headers['webhook-signature'] as string,
      }),
    ).not.toThrow();
  });
});
