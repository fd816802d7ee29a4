/** Sessions of the web console (migration 0017): the token's hash, the key it stands for, its CSRF token. */
export interface ConsoleSessionTable {
  token_hash: string;
  api_key_id: string;
  csrf_token: string;
  created_at: string;
  expires_at: string;
}
