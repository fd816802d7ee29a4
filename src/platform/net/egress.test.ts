import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { EgressBlockedError, isAllowedHostLiteral, isPublicAddress, publicOnlyLookup } from './egress.js';

describe('egress policy', () => {
  it.each([
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '10.255.255.255',
    '100.64.0.1',
    '100.127.255.254',
    '127.0.0.1',
    '127.8.9.10',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.2.10',
    '192.168.1.1',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '[::1]',
    'fc00::1',
    'fd12:3456:789a::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'ff02::1',
    '2001:db8::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '[::ffff:a00:1]',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '64:ff9b::10.0.0.1',
    '2002:c0a8:0101::1', // 6to4 of 192.168.1.1
    'not-an-ip',
    '1.2.3',
    '01.2.3.4',
    '1:2:3:4:5:6:7:8:9',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.167.1.1',
    '169.253.1.1',
    '2606:4700:4700::1111',
    '[2a00:1450:4001::200e]',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2002:0808:0808::1',
  ])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('judges URL hosts without DNS: localhost names and private literals are refused, names pass', () => {
    for (const url of [
      'http://localhost/',
      'http://LOCALHOST./',
      'http://api.localhost/',
      'http://127.1/',
      'http://0x7f000001/',
      'http://[::ffff:127.0.0.1]/',
      'http://[fe80::1]/',
      'http://0.0.0.0/',
    ]) {
      expect(isAllowedHostLiteral(new URL(url).hostname), url).toBe(false);
    }
    for (const url of [
      'https://example.com/hook',
      'http://8.8.8.8/',
      'http://[2606:4700::1]/',
      'https://localhost.example.com/',
    ]) {
      expect(isAllowedHostLiteral(new URL(url).hostname), url).toBe(true);
    }
  });

  function lookupWith(
    addresses: LookupAddress[],
    all: boolean,
  ): Promise<{ err: Error | null; address: unknown; family?: number }> {
    const fake = ((_host: string, _options: unknown, cb: (err: Error | null, a: LookupAddress[]) => void) =>
      cb(null, addresses)) as never;
    return new Promise((resolve) =>
      publicOnlyLookup(fake)('hook.example', { all }, (err, address, family) => resolve({ err, address, family })),
    );
  }

  it('hands the socket only vetted addresses, in both callback forms', async () => {
    const addresses = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ];
    expect(await lookupWith(addresses, true)).toEqual({ err: null, address: addresses, family: undefined });
    expect(await lookupWith(addresses, false)).toEqual({ err: null, address: '93.184.216.34', family: 4 });
  });

  it('refuses a name when any of its addresses is private (DNS rebinding, mixed answers)', async () => {
    const result = await lookupWith(
      [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.5', family: 4 },
      ],
      true,
    );
    expect(result.err).toBeInstanceOf(EgressBlockedError);
    expect((result.err as EgressBlockedError).code).toBe('EGRESS_BLOCKED');
    expect((await lookupWith([{ address: '::ffff:127.0.0.1', family: 6 }], false)).err).toBeInstanceOf(
      EgressBlockedError,
    );
  });
});
