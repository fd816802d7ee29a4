import { fetchHydra, type HttpClientOptions } from '@api-platform/admin';
import type { AuthProvider } from 'react-admin';

/**
 * The API key of the session: asked for once on the login page, kept in sessionStorage (gone
 * when the tab closes), sent as `X-API-KEY` on every request to the API.
 */

const STORAGE_KEY = 'property-admin.api-key';

export function sessionApiKey(): string | null {
  return window.sessionStorage.getItem(STORAGE_KEY);
}

/**
 * The request headers with the key added. The data provider's own headers stay: an edit is a
 * PATCH with `Content-Type: application/merge-patch+json`, and replacing the headers (as the
 * usual recipe does) would send it as JSON-LD and get 415 Unsupported Media Type.
 */
export function withApiKey(headers: HttpClientOptions['headers']): Headers {
  const merged = new Headers(typeof headers === 'function' ? headers() : headers);
  const key = sessionApiKey();
  if (key) merged.set('X-API-KEY', key);
  return merged;
}

/** `fetchHydra` with the session's key. */
export const httpClient = (url: URL, options: HttpClientOptions = {}) =>
  fetchHydra(url, { ...options, headers: withApiKey(options.headers) });

/** Logs in by checking the key against the API (any valid key may list `/users`: itself at least). */
export function apiKeyAuthProvider(entrypoint: string): AuthProvider {
  // No getPermissions: react-admin (ra-core 5, useLogout) warns that a getPermissions resolving at
  // once races the store reset of a logout, so CoreAdminRoutes mounts LogoutOnMount again and
  // again. It did here: every first visit without a key pushed `#/login` until Chromium capped the
  // history at 50 entries, and the login form came 15–25 s late on a loaded machine (decision 0022).
  return {
    async login(params: { apiKey?: unknown }) {
      const key = typeof params.apiKey === 'string' ? params.apiKey.trim() : '';
      if (!key) throw new Error('Please enter an API key.');
      const response = await fetch(`${entrypoint}/users?itemsPerPage=1`, {
        headers: { Accept: 'application/ld+json', 'X-API-KEY': key },
      });
      if (response.status === 401) throw new Error('This API key is not valid.');
      if (!response.ok) throw new Error(`The API answered ${response.status} ${response.statusText}.`);
      window.sessionStorage.setItem(STORAGE_KEY, key);
    },
    async logout() {
      window.sessionStorage.removeItem(STORAGE_KEY);
    },
    async checkAuth() {
      // message: false: no "please log in" notification, just the login page.
      if (!sessionApiKey()) throw { message: false };
    },
    async checkError(error: { status?: number }) {
      // 401: the key is gone (account deleted): back to the login page. 403 stays (a notification).
      if (error?.status === 401) {
        window.sessionStorage.removeItem(STORAGE_KEY);
        throw new Error('The API key is no longer valid; please log in again.');
      }
    },
  };
}
