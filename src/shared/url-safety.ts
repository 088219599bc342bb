import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';
import { settledWithin } from './time.ts';

/**
 * Server-side request forgery guard for every URL the service calls on a tenant's behalf: webhook
 * endpoints, and store domains when no PLATFORM_BASE_URL is set. A tenant must not be able to make
 * the service reach its own network (loopback, private ranges, link-local such as the cloud
 * metadata address 169.254.169.254, unique-local IPv6, ...) and read the outcome back.
 */
export interface UrlPolicy {
  /** Only `https://` URLs (production). */
  httpsOnly: boolean;
  /** Any address may be reached (outside production, or WEBHOOK_ALLOW_PRIVATE_URLS=true). */
  allowPrivateAddresses: boolean;
}

/** How long a check at creation waits for DNS; a host that does not resolve in time is checked again when called. */
const CREATION_LOOKUP_TIMEOUT_MS = 2_000;

/** A connection the guard refused: the host is or resolved to an address the service must not reach. */
export class UnsafeAddressError extends Error {
  readonly code = 'EADDRNOTALLOWED';

  constructor(host: string, address: string, range: string) {
    super(`refused to connect to ${describeAddress(host, address, range)}`);
    this.name = 'UnsafeAddressError';
  }
}

/**
 * A host name's address is not said: these texts reach API callers (a 400, a delivery's `lastError`, a
 * job's `errorMessage`), and a tenant must not map the service's internal network through its resolver.
 */
const describeAddress = (host: string, address: string, range: string) =>
  host === address ? `${address} (${range} address)` : `${host}, which resolves to an address in the ${range} range`;

/**
 * Null for a public unicast address; otherwise the name of its range (`loopback`, `private`,
 * `linkLocal`, `uniqueLocal`, `unspecified`, ...). IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is judged
 * as the IPv4 address it carries. Everything that is not plain unicast is refused, which also
 * covers NAT64 and 6to4 forms that embed an IPv4 address.
 */
export function forbiddenRange(address: string): string | null {
  const bare = unbracketed(address);
  if (!ipaddr.isValid(bare)) return 'invalid';
  const parsed = ipaddr.process(bare);
  const range = parsed.range();
  if (range !== 'unicast') return range;
  // IPv4-compatible IPv6 (RFC 4291's deprecated ::/96; the URL parser writes `[::127.0.0.1]` as
  // `[::7f00:1]`): ipaddr.js calls it unicast, and some stacks route it to the IPv4 address it carries.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) return 'ipv4Compatible';
  return null;
}

/** Port 0 names no service: a URL or domain carrying it is refused rather than left to the network stack. */
const refusesPort = (port: string) => port !== '' && Number(port) === 0;

const unbracketed = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** RFC 6761: `localhost` and `*.localhost` are loopback whatever DNS says. */
const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/**
 * Why `rawUrl` may not be registered, or null when it may. Checked when an endpoint is created or
 * changed; the connection itself is checked again when it is made (`guardedAgent`), since DNS can
 * change. A host that does not resolve now is accepted: it cannot be reached either, and is checked
 * on every call.
 */
export async function urlRefusal(rawUrl: string, policy: UrlPolicy): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && (policy.httpsOnly || url.protocol !== 'http:')) {
    return policy.httpsOnly ? 'must be an https:// URL' : 'must be an http:// or https:// URL';
  }
  if (url.username || url.password) return 'must not contain credentials';
  if (refusesPort(url.port)) return 'must not use port 0';
  return hostRefusal(url.hostname, policy);
}

/** Why `host` may not be called, or null when it may (see `urlRefusal`). */
export async function hostRefusal(host: string, policy: UrlPolicy): Promise<string | null> {
  if (policy.allowPrivateAddresses) return null;
  const bare = unbracketed(host.toLowerCase()).replace(/\.$/, '');
  if (isLocalhostName(bare)) return `must not point at ${bare} (a loopback host name)`;
  const addresses = isIP(bare) ? [bare] : await resolveForCheck(bare);
  for (const address of addresses) {
    const range = forbiddenRange(address);
    if (range) return `must not point at ${describeAddress(bare, address, range)}`;
  }
  return null;
}

/**
 * Why a store's shop domain may not be called, or null. Only when store URLs are `https://{shopDomain}`
 * (no PLATFORM_BASE_URL): a template set by the operator decides where calls go instead.
 */
export function shopDomainRefusal(shopDomain: string, settings: { platformBaseUrl: string | null; urlPolicy: UrlPolicy }): Promise<string | null> {
  if (settings.platformBaseUrl !== null) return Promise.resolve(null);
  // The URL parser reads the host as a platform call would (`0177.0.0.1` is 127.0.0.1).
  let url: URL;
  try {
    url = new URL(`https://${shopDomain}`);
  } catch {
    return Promise.resolve('is not a host name');
  }
  if (refusesPort(url.port) && !settings.urlPolicy.allowPrivateAddresses) return Promise.resolve('must not use port 0');
  return hostRefusal(url.hostname, settings.urlPolicy);
}

async function resolveForCheck(host: string): Promise<string[]> {
  const lookup = () =>
    new Promise<string[]>((resolve) => dnsLookup(host, { all: true }, (error, addresses) => resolve(error ? [] : addresses.map((entry) => entry.address))));
  return (await settledWithin(lookup, CREATION_LOOKUP_TIMEOUT_MS))?.value ?? [];
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * `dns.lookup` as net.connect calls it, refusing when any address of the host is forbidden: the
 * socket connects to exactly the addresses this returns, so what is checked is what is connected to.
 */
function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    for (const { address } of addresses) {
      const range = forbiddenRange(address);
      if (range) return callback(new UnsafeAddressError(hostname, address, range), []);
    }
    if (options.all) return callback(null, addresses);
    const [first] = addresses;
    if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(null, first.address, first.family);
  });
}

/**
 * An undici dispatcher for tenant-chosen URLs. Unless the policy allows private addresses, every
 * connection is checked on the address it goes to: a host name through the lookup net.connect
 * uses, an IP literal (which net.connect never looks up) before connecting.
 */
export function guardedAgent(policy: UrlPolicy, options: Agent.Options = {}): Agent {
  if (policy.allowPrivateAddresses) return new Agent(options);
  const connect = buildConnector({ lookup: guardedLookup } as buildConnector.BuildOptions);
  return new Agent({
    ...options,
    connect: (connectOptions, callback) => {
      const host = unbracketed(connectOptions.hostname);
      const range = isIP(host) ? forbiddenRange(host) : null;
      if (range) return callback(new UnsafeAddressError(host, host, range), null);
      return connect(connectOptions, callback);
    },
  });
}
