import { requestOrigin } from '../messages/message.routes.js';
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import {
  CreateDomainBody,
  DomainIdParams,
  DomainResponse,
  ListDomainsQuery,
  ListDomainsResponse,
  PodDomainParams,
  PodParams,
  UpdateDomainBody,
  toDomainItemResponse,
  toDomainResponse,
} from './domain.schemas.js';
import type { DomainPlace, DomainService } from './domain.service.js';

const ref = Type.Ref('ErrorResponse');

/**
 * `/v0/domains/…` and `/v0/pods/:pod_id/domains/…` (agentmail 0.5.27 `domains` and
 * `pods.domains`): the same operations, the pod routes limited to the pod's domains.
 */
/** What `domains.getSetupLink` answers here: the domain's page of the web console, where a person sees and copies its records. */
const SetupLinkResponse = Type.Object({
  supported: Type.Boolean({ description: 'Always true: the console page works for every DNS provider' }),
  provider_name: Type.Optional(Type.String()),
  url: Type.Optional(Type.String({ description: "The domain's page of the web console" })),
});

export function domainRoutes(app: InboxApp, domains: DomainService, publicUrl?: string): void {
  const tags = ['domains'];
  const place = async (request: FastifyRequest): Promise<DomainPlace> => {
    const podId = (request.params as { pod_id?: string }).pod_id;
    return podId === undefined ? {} : domains.pod(ownerOf(request), podId);
  };

  for (const base of ['/v0/domains', '/v0/pods/:pod_id/domains'] as const) {
    const inPod = base !== '/v0/domains';
    const where = inPod ? ' of a pod' : '';
    const params = inPod ? PodDomainParams : DomainIdParams;

    app.post(base, {
      schema: {
        tags,
        summary: `Add a domain${where}`,
        description:
          "Generates the domain's DKIM key and answers the DNS records to publish (status NOT_STARTED until the first verify).",
        ...(inPod ? { params: PodParams } : {}),
        body: CreateDomainBody,
        response: { 201: DomainResponse, 409: ref, ...errorResponses },
      },
      handler: async (request, reply) => {
        const b = request.body;
        const view = await domains.create(ownerOf(request), await place(request), {
          domain: b.domain,
          ...(b.feedback_enabled !== undefined ? { feedbackEnabled: b.feedback_enabled } : {}),
          ...(b.subdomains_enabled !== undefined ? { subdomainsEnabled: b.subdomains_enabled } : {}),
          ...(b.tracking_enabled !== undefined ? { trackingEnabled: b.tracking_enabled } : {}),
        });
        return reply.code(201).send(toDomainResponse(view));
      },
    });

    app.get(base, {
      schema: {
        tags,
        summary: `List domains${where}, newest first`,
        ...(inPod ? { params: PodParams } : {}),
        querystring: ListDomainsQuery,
        response: { 200: ListDomainsResponse, ...errorResponses },
      },
      handler: async (request) => {
        const q = request.query;
        const result = await domains.list(ownerOf(request), await place(request), {
          ...(q.limit !== undefined ? { limit: q.limit } : {}),
          ...(q.page_token ? { pageToken: q.page_token } : {}),
          ...(q.ascending !== undefined ? { ascending: q.ascending } : {}),
        });
        return {
          count: result.items.length,
          limit: result.limit,
          ...(result.nextPageToken ? { next_page_token: result.nextPageToken } : {}),
          domains: result.items.map(toDomainItemResponse),
        };
      },
    });

    app.get(`${base}/:domain_id`, {
      schema: {
        tags,
        summary: `Get a domain${where} with its DNS records`,
        params,
        response: { 200: DomainResponse, ...errorResponses },
      },
      handler: async (request) =>
        toDomainResponse(await domains.get(ownerOf(request), await place(request), request.params.domain_id)),
    });

    app.patch(`${base}/:domain_id`, {
      schema: {
        tags,
        summary: `Update a domain${where}`,
        params,
        body: UpdateDomainBody,
        response: { 200: DomainResponse, ...errorResponses },
      },
      handler: async (request) =>
        toDomainResponse(
          await domains.update(ownerOf(request), await place(request), request.params.domain_id, {
            ...(request.body.feedback_enabled !== undefined ? { feedbackEnabled: request.body.feedback_enabled } : {}),
            ...(request.body.subdomains_enabled !== undefined
              ? { subdomainsEnabled: request.body.subdomains_enabled }
              : {}),
            ...(request.body.tracking_enabled !== undefined ? { trackingEnabled: request.body.tracking_enabled } : {}),
          }),
        ),
    });

    app.delete(`${base}/:domain_id`, {
      schema: {
        tags,
        summary: `Delete a domain${where} (refused while inboxes use it)`,
        params,
        response: { 204: Type.Null(), 409: ref, ...errorResponses },
      },
      handler: async (request, reply) => {
        await domains.delete(ownerOf(request), await place(request), request.params.domain_id);
        return reply.code(204).send(null);
      },
    });

    app.post(`${base}/:domain_id/verify`, {
      schema: {
        tags,
        summary: `Verify the DNS records of a domain${where}`,
        description:
          'Looks every record up in DNS now and answers the domain with the status of each; 409 when another organization verified the domain first, 503 when DNS did not answer.',
        params,
        response: { 200: DomainResponse, 409: ref, 503: ref, ...errorResponses },
      },
      handler: async (request) =>
        toDomainResponse(await domains.verify(ownerOf(request), await place(request), request.params.domain_id)),
    });

    app.get(`${base}/:domain_id/setup-link`, {
      schema: {
        tags,
        summary: `A link to set up a domain${where}: its page in the web console`,
        description:
          "AgentMail answers a Domain Connect URL of the domain's DNS provider; this service answers the console page that lists the records to publish (with copy buttons and the zone file) and verifies them.",
        params,
        response: { 200: SetupLinkResponse, ...errorResponses },
      },
      handler: async (request) => {
        const view = await domains.get(ownerOf(request), await place(request), request.params.domain_id);
        const origin = (publicUrl ?? requestOrigin(request)).replace(/\/+$/, '');
        return {
          supported: true,
          provider_name: 'Inbox console',
          url: `${origin}/console/#/domains/${encodeURIComponent(view.domain.domain)}`,
        };
      },
    });

    app.get(`${base}/:domain_id/zone-file`, {
      schema: {
        tags,
        summary: `The DNS records of a domain${where} as a BIND zone file fragment`,
        params,
        response: { 200: Type.String({ description: 'text/dns' }), ...errorResponses },
      },
      handler: async (request, reply) => {
        const zone = await domains.zoneFile(ownerOf(request), await place(request), request.params.domain_id);
        return reply
          .header('content-type', 'text/dns; charset=utf-8')
          .header('content-disposition', `attachment; filename="${zone.domain}.zone"`)
          .send(zone.text);
      },
    });
  }
}
