import type { MigrationSet } from '../../platform/db/migrate.js';
import * as createTables from './0001_create_tables.js';
import * as webhookDeliveryOutcome from './0003_webhook_delivery_outcome.js';
import * as boundedSubjectsAndDeliveryReports from './0004_bounded_subjects_and_delivery_reports.js';
import * as podsAndScopedKeys from './0005_pods_and_scoped_keys.js';
import * as drafts from './0006_drafts.js';
import * as searchIndex from './0007_search_index.js';
import * as domains from './0008_domains.js';
import * as allowBlockLists from './0009_allow_block_lists.js';
import * as usageAndWebhookScopes from './0010_usage_and_webhook_scopes.js';
import * as searchStatistics from './0011_search_statistics.js';
import * as messageChunks from './0012_message_chunks.js';
import * as blobs from './0013_blobs.js';
import * as inboxStatus from './0014_inbox_status.js';
import * as agentHumanChanges from './0015_agent_human_changes.js';
import * as imapFolders from './0016_imap_folders.js';
import * as consoleSessions from './0017_console_sessions.js';
import * as draftUids from './0018_draft_uids.js';
import * as folderModseq from './0019_folder_modseq.js';
import * as bodyBlobs from './0020_body_blobs.js';

export const inboxMigrations: MigrationSet = {
  '0001_create_tables': createTables,
  '0003_webhook_delivery_outcome': webhookDeliveryOutcome,
  '0004_bounded_subjects_and_delivery_reports': boundedSubjectsAndDeliveryReports,
  '0005_pods_and_scoped_keys': podsAndScopedKeys,
  '0006_drafts': drafts,
  '0007_search_index': searchIndex,
  '0008_domains': domains,
  '0009_allow_block_lists': allowBlockLists,
  '0010_usage_and_webhook_scopes': usageAndWebhookScopes,
  '0011_search_statistics': searchStatistics,
  '0012_message_chunks': messageChunks,
  '0013_blobs': blobs,
  '0014_inbox_status': inboxStatus,
  '0015_agent_human_changes': agentHumanChanges,
  '0016_imap_folders': imapFolders,
  '0017_console_sessions': consoleSessions,
  '0018_draft_uids': draftUids,
  '0019_folder_modseq': folderModseq,
  '0020_body_blobs': bodyBlobs,
};

export const INBOX_MIGRATION_TABLE = 'inbox_migrations';
