import type { Executor } from '../../platform/db/types.js';
import type { JobsDatabase } from '../../platform/jobs/jobs.table.js';
import type { AgentSignupTable, ApiKeyTable, OrganizationTable, PodTable } from './api-key.table.js';
import type { ConsoleSessionTable } from './console-session.table.js';
import type { DomainTable } from './domain.table.js';
import type { AccessListEntryTable } from './access-list.table.js';
import type { DraftAttachmentTable, DraftLabelTable, DraftTable } from './draft.table.js';
import type { EventTable } from './event.table.js';
import type { FolderCounterTable, FolderMessageTable } from './folder.table.js';
import type { InboxTable } from './inbox.table.js';
import type {
  AttachmentTable,
  BlobChunkTable,
  BlobTable,
  MessageLabelTable,
  MessageTable,
  SendCounterTable,
} from './message.table.js';
import type { DeliveryReportTable } from './inbound.table.js';
import type { UsageCountTable } from './usage.table.js';
import type { ThreadTable } from './thread.table.js';
import type { WebhookDeliveryTable, WebhookTable } from './webhook.table.js';

/** The inbox service's database, composed from each feature's tables. */
export interface InboxDatabase extends JobsDatabase {
  organizations: OrganizationTable;
  pods: PodTable;
  api_keys: ApiKeyTable;
  console_sessions: ConsoleSessionTable;
  inboxes: InboxTable;
  threads: ThreadTable;
  messages: MessageTable;
  message_labels: MessageLabelTable;
  attachments: AttachmentTable;
  blobs: BlobTable;
  blob_chunks: BlobChunkTable;
  send_counters: SendCounterTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  events: EventTable;
  service_secrets: { name: string; value: string };
  delivery_reports: DeliveryReportTable;
  access_list_entries: AccessListEntryTable;
  usage_counts: UsageCountTable;
  agent_signups: AgentSignupTable;
  domains: DomainTable;
  drafts: DraftTable;
  draft_labels: DraftLabelTable;
  draft_attachments: DraftAttachmentTable;
  folder_counters: FolderCounterTable;
  folder_messages: FolderMessageTable;
}

export type Db = Executor<InboxDatabase>;
