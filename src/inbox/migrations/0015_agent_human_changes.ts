import type { Kysely } from 'kysely';

// agent.attachHuman (POST /v0/agent/human; issue 28, decision 0043): how often an agent
// organization replaced its human (AgentMail allows 2). An organization signed up without a human
// keeps human_email '' until one is attached: the column stays NOT NULL on both dialects.

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations never depend on application types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('agent_signups')
    .addColumn('human_changes', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agent_signups').dropColumn('human_changes').execute();
}
