/** Delivery status notifications turned into message.bounced, by the report's own Message-ID (migration 0004). */
export interface DeliveryReportTable {
  inbox_id: string;
  message_id: string;
  created_at: string;
}
