/** Kysely view of the columns the security layer reads and writes (the engine handles the rest). */
export interface AccountTable {
  id: number;
  name: string;
  email: string;
  role: string;
  api_key_hash: string;
}

export interface SecurityDatabase {
  users: AccountTable;
}
