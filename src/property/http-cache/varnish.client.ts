import http from 'node:http';
import https from 'node:https';
import type { FastifyBaseLogger } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { redactUrl } from '../../platform/config/config.js';
import { MAX_TAGS_LENGTH } from '../engine/http-cache.js';

/**
 * Purges shared caches the way API Platform's VarnishPurger does: one `BAN` request per cache
 * whose `ApiPlatform-Ban-Regex` header matches every stored answer whose `Cache-Tags` name one of
 * the written IRIs; the VCL turns it into `ban("obj.http.Cache-Tags ~ " + regex)`
 * (test/fixtures/varnish.vcl). Unlike API Platform's pattern, ours is anchored at both ends of a
 * tag, so `/api/bundeslands` does not match the answer tagged `/x/api/bundeslands`.
 *
 * Writes that commit in the same turn of the event loop share one request per cache. A purge
 * never fails a write: a refused, failed or late purge is logged and counted
 * (`property_http_cache_purges_total{result="failed"}`), and the write answers anyway.
 */

export interface CachePurger {
  /** Resolves when every cache confirmed the purge, failed, or ran out of time; never rejects. */
  purge(tags: readonly string[]): Promise<void>;
  close(): void;
}

export interface VarnishPurgerOptions {
  readonly urls: readonly string[];
  readonly timeoutMs: number;
  readonly log: FastifyBaseLogger;
  readonly registry?: Registry;
}

export const BAN_HEADER = 'ApiPlatform-Ban-Regex';
const ESCAPE = /[.*+?^${}()|[\]\\]/g;
const IDLE_MS = 2_000;

/** The ban regexes for `tags`: as few as fit a header each. */
export function banRegexes(tags: readonly string[]): string[] {
  const out: string[] = [];
  let chunk: string[] = [];
  let length = 0;
  for (const tag of tags) {
    const part = tag.replace(ESCAPE, '\\$&');
    if (chunk.length && length + part.length + 1 > MAX_TAGS_LENGTH - 16) {
      out.push(`(^|,)(${chunk.join('|')})($|,)`);
      chunk = [];
      length = 0;
    }
    chunk.push(part);
    length += part.length + 1;
  }
  if (chunk.length) out.push(`(^|,)(${chunk.join('|')})($|,)`);
  return out;
}

export function createVarnishPurger({ urls, timeoutMs, log, registry }: VarnishPurgerOptions): CachePurger {
  // Idle connections are dropped after 2 s, before Varnish's own idle timeout (5 s) closes them
  // under a request; one that closes anyway while reused is retried once on a new connection.
  const agentOptions = { keepAlive: true, maxSockets: 8, timeout: IDLE_MS };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };
  const purges = new Counter({
    name: 'property_http_cache_purges_total',
    help: 'BAN requests sent to the shared caches (PROPERTY_HTTP_CACHE_PURGE_URLS), by result',
    labelNames: ['result'] as const,
    registers: registry ? [registry] : [],
  });

  const ban = (target: string, regex: string, signal = AbortSignal.timeout(timeoutMs), retry = true): Promise<void> =>
    new Promise<void>((resolve) => {
      const url = new URL(target);
      const request = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'BAN',
        headers: { [BAN_HEADER]: regex },
        agent: agents[url.protocol as 'http:' | 'https:'],
        signal,
      });
      let settled = false;
      const fail = (reason: unknown) => {
        if (settled) return;
        settled = true;
        purges.inc({ result: 'failed' });
        log.warn(
          { err: reason, cache: redactUrl(target) },
          'http cache: purge failed; answers may stay stale until they expire',
        );
        resolve();
      };
      request.on('error', (err: NodeJS.ErrnoException) => {
        // A kept-alive connection the cache closed as we reused it: the request never arrived.
        const closedUnderUs = err.code === 'ECONNRESET' || err.message === 'socket hang up';
        if (retry && request.reusedSocket && closedUnderUs && !settled && !signal.aborted) {
          settled = true;
          void ban(target, regex, signal, false).then(resolve);
        } else fail(err);
      });
      request.on('response', (response) => {
        response.resume();
        response.on('error', fail);
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            if (settled) return;
            settled = true;
            purges.inc({ result: 'ok' });
            resolve();
          } else fail(new Error(`the cache answered ${status}`));
        });
      });
      request.end();
    });

  let pending: Set<string> | undefined;
  let flushed: Promise<void> = Promise.resolve();
  return {
    purge(tags) {
      if (!pending) {
        const batch = new Set<string>();
        pending = batch;
        flushed = new Promise<void>((resolve) =>
          setImmediate(() => {
            pending = undefined;
            const regexes = banRegexes([...batch]);
            void Promise.all(urls.flatMap((target) => regexes.map((regex) => ban(target, regex)))).then(() =>
              resolve(),
            );
          }),
        );
      }
      for (const tag of tags) pending.add(tag);
      return flushed;
    },
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
