import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';

/**
 * Egress policy for requests a server makes to addresses its users chose (webhooks): only
 * public unicast addresses may be reached (OWASP API7, SSRF). The check runs on the addresses
 * a name resolves to at connection time, and the connection goes to the address that was
 * checked, so a name that changes its answer between check and use (DNS rebinding) gains nothing.
 */

type Bytes = readonly number[];

function parseIPv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = parts.map((p) => (/^(0|[1-9]\d{0,2})$/.test(p) ? Number(p) : NaN));
  return bytes.every((b) => b >= 0 && b <= 255) ? bytes : undefined;
}

function parseIPv6(text: string): number[] | undefined {
  let s = text.replace(/%.*$/, ''); // a zone id says which interface, not which address
  // A dotted IPv4 tail (`::ffff:1.2.3.4`) is the last two groups written in decimal.
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const four = parseIPv4(dotted[2] as string);
    if (!four) return undefined;
    const [a, b, c, d] = four as [number, number, number, number];
    s = `${dotted[1] as string}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const group = (h: string) => (h === '' ? [] : h.split(':'));
  const head = group(halves[0] as string);
  const rest = halves.length === 2 ? group(halves[1] as string) : [];
  const missing = 8 - head.length - rest.length;
  if ((halves.length === 2 && missing < 1) || (halves.length === 1 && missing !== 0)) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  const bytes: number[] = [];
  for (const g of groups) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return undefined;
    const n = parseInt(g, 16);
    bytes.push(n >> 8, n & 0xff);
  }
  return bytes.length === 16 ? bytes : undefined;
}

function inPrefix(addr: Bytes, net: Bytes, bits: number): boolean {
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if (((addr[byte] as number) & mask) !== ((net[byte] as number) & mask)) return false;
  }
  return true;
}

const v4 = (cidr: string): [Bytes, number] => {
  const [a, b] = cidr.split('/');
  return [parseIPv4(a as string) as Bytes, Number(b)];
};
const v6 = (cidr: string): [Bytes, number] => {
  const [a, b] = cidr.split('/');
  return [parseIPv6(a as string) as Bytes, Number(b)];
};

/** Not globally reachable unicast (RFC 6890 and its updates), loopback, link-local, multicast. */
const BLOCKED_V4 = [
  '0.0.0.0/8', // "this network", incl. 0.0.0.0 which reaches the local host
  '10.0.0.0/8',
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8',
  '169.254.0.0/16', // link-local, incl. cloud metadata at 169.254.169.254
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, incl. broadcast
].map(v4);

const BLOCKED_V6 = [
  '::/128',
  '::1/128',
  '100::/64', // discard
  '2001:db8::/32', // documentation
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'fec0::/10', // old site-local
  'ff00::/8', // multicast
].map(v6);

/** IPv6 ranges that carry an IPv4 address in their last 32 bits (or bits 16–47 for 6to4). */
const EMBEDDING_V4: [Bytes, number, number][] = [
  [...v6('::ffff:0:0/96'), 12], // IPv4-mapped
  [...v6('::/96'), 12], // IPv4-compatible (deprecated)
  [...v6('64:ff9b::/96'), 12], // NAT64
  [...v6('64:ff9b:1::/48'), 12], // local-use NAT64
  [...v6('2002::/16'), 2], // 6to4
];

function publicV4(bytes: Bytes): boolean {
  return !BLOCKED_V4.some(([net, bits]) => inPrefix(bytes, net, bits));
}

/**
 * True when `address` (an IP literal, IPv6 with or without brackets) is a public unicast
 * address; false for private, loopback, link-local, reserved and multicast ones, for IPv6
 * addresses that embed such an IPv4 address, and for anything that is not an IP address.
 */
export function isPublicAddress(address: string): boolean {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const four = parseIPv4(text);
  if (four) return publicV4(four);
  const six = parseIPv6(text);
  if (!six) return false;
  if (BLOCKED_V6.some(([net, bits]) => inPrefix(six, net, bits))) return false;
  for (const [net, bits, at] of EMBEDDING_V4) {
    if (inPrefix(six, net, bits)) return publicV4(six.slice(at, at + 4));
  }
  return true;
}

/** An IP literal as the URL parser leaves it in `hostname` (IPv6 keeps its brackets). */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}

/** Names that mean this host without asking DNS (RFC 6761): `localhost` and `*.localhost`. */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/**
 * Whether a URL host may be the target of a server-side request, judged without DNS: IP
 * literals must be public and `localhost` names are refused. Other names are judged when they
 * are resolved (`publicOnlyLookup`).
 */
export function isAllowedHostLiteral(hostname: string): boolean {
  if (isLocalhostName(hostname)) return false;
  const ip = ipLiteral(hostname);
  return ip === undefined || isPublicAddress(ip);
}

/** Raised through a socket's lookup when a name resolves to an address that is not public. */
export class EgressBlockedError extends Error {
  readonly code = 'EGRESS_BLOCKED';
  constructor(readonly hostname: string) {
    super(`${hostname} resolves to a private, loopback, link-local or reserved address`);
    this.name = 'EgressBlockedError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `http.request`/`net.connect`: resolves every address of the name, refuses the
 * connection if any of them is not public (a name that answers with a private address among
 * public ones is treated as hostile), and hands the socket only the vetted addresses.
 */
export function publicOnlyLookup(resolve: typeof dnsLookup = dnsLookup) {
  return (
    hostname: string,
    options: { family?: number | string; hints?: number; all?: boolean },
    callback: LookupCallback,
  ): void => {
    const family =
      options.family === 'IPv4'
        ? 4
        : options.family === 'IPv6'
          ? 6
          : typeof options.family === 'number'
            ? options.family
            : 0;
    const query: LookupAllOptions = {
      all: true,
      family,
      ...(options.hints !== undefined ? { hints: options.hints } : {}),
    };
    resolve(hostname, query, (err, addresses) => {
      if (err) return callback(err, []);
      if (isLocalhostName(hostname) || !addresses.length || addresses.some((a) => !isPublicAddress(a.address)))
        return callback(new EgressBlockedError(hostname), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0] as LookupAddress;
      return callback(null, first.address, first.family);
    });
  };
}
