import { ListGuesser } from '@api-platform/admin';
import { useEffect, type ReactNode } from 'react';
import { useRefresh } from 'react-admin';
import { withApiKey } from './api-key.js';

/**
 * Live updates for the admin (decision 0038): a subscriber token is asked for with the session's
 * API key (`GET /.well-known/mercure/token`), handed to the hub as the `mercureAuthorization`
 * cookie (scoped to the hub's path, so it never travels to the API and never sits in a URL or a
 * log), and one EventSource subscribes to every topic the token allows. Each update refreshes
 * what is on screen (react-admin refetches its queries): a property another person creates,
 * edits or deletes shows without a reload. The token runs out with its lifetime; a stream the
 * hub closed is opened again with a new one.
 */

const TOKEN_URL = '/.well-known/mercure/token';

export function LiveUpdates() {
  const refresh = useRefresh();
  useEffect(() => {
    let source: EventSource | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let pending: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const again = () => {
      if (!stopped) retry = setTimeout(() => void connect(), 3000);
    };
    const connect = async () => {
      try {
        const response = await fetch(TOKEN_URL, { headers: withApiKey({ Accept: 'application/json' }) });
        if (!response.ok || stopped) return again();
        const { token, hub } = (await response.json()) as { token: string; hub: string };
        const url = new URL(hub, window.location.href);
        document.cookie = `mercureAuthorization=${token}; Path=${url.pathname}; SameSite=Strict`;
        url.searchParams.append('topic', '*');
        source = new EventSource(url.href, { withCredentials: true });
        source.onmessage = () => {
          // A burst of updates (a bulk delete) refreshes once.
          if (pending === undefined)
            pending = setTimeout(() => {
              pending = undefined;
              refresh();
            }, 100);
        };
        source.onerror = () => {
          if (source?.readyState === EventSource.CLOSED) {
            source.close();
            again();
          }
        };
      } catch {
        again();
      }
    };
    void connect();
    return () => {
      stopped = true;
      source?.close();
      clearTimeout(retry);
      clearTimeout(pending);
    };
  }, [refresh]);
  return null;
}

/** The guessed list of a resource (its columns given as children, or guessed), kept up to date by LiveUpdates. */
export function LiveListGuesser({ children }: { children?: ReactNode }) {
  return (
    <>
      <LiveUpdates />
      <ListGuesser>{children}</ListGuesser>
    </>
  );
}
