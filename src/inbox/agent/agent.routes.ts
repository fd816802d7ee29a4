import { Type } from 'typebox';
import { ownerOf } from '../http/auth.js';
import { errorResponses } from '../http/common.schemas.js';
import type { InboxApp } from '../http/types.js';
import type { AgentService } from './agent.service.js';

const SignUpBody = Type.Object({
  human_email: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 320,
      description:
        'The human who receives the 6-digit code; without it the inbox receives but sends to nobody until POST /v0/agent/human',
    }),
  ),
  username: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'Local part of the new inbox (on the default domain)',
  }),
  source: Type.Optional(Type.String({ maxLength: 255 })),
  referrer: Type.Optional(Type.String({ maxLength: 255 })),
});
const SignUpResponse = Type.Object({
  organization_id: Type.String(),
  inbox_id: Type.String(),
  api_key: Type.String({ description: 'Shown this once' }),
});
const VerifyBody = Type.Object({ otp_code: Type.String({ minLength: 1, maxLength: 32 }) });
const VerifyResponse = Type.Object({ verified: Type.Boolean() });
const AttachHumanBody = Type.Object({
  human_email: Type.String({
    minLength: 1,
    maxLength: 320,
    description: 'The human who owns the agent: a 6-digit code is mailed there for POST /v0/agent/verify',
  }),
});
const AttachHumanResponse = Type.Object({
  human_email: Type.String(),
  instructions: Type.String({ description: 'Next steps for the agent, in plain text' }),
});

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Routes of the agent sign-up: 403 before anything else while INBOX_AGENT_SIGNUP is off. */
    agentSignup?: boolean;
  }
}

/** POST /v0/agent/sign-up (no key), /v0/agent/human and /v0/agent/verify (the key sign-up returned). */
export function agentRoutes(app: InboxApp, agent: AgentService): void {
  const tags = ['agent'];
  const forbidden = { 403: Type.Ref('ErrorResponse'), 409: Type.Ref('ErrorResponse') };

  app.post('/v0/agent/sign-up', {
    config: { public: true, agentSignup: true },
    schema: {
      tags,
      summary: 'Create an organization with an inbox and a limited API key; a code goes to the human',
      security: [],
      body: SignUpBody,
      response: { 200: SignUpResponse, ...forbidden, ...errorResponses },
    },
    handler: async (request) => {
      const b = request.body;
      const result = await agent.signUp(
        { ...(b.human_email !== undefined ? { humanEmail: b.human_email } : {}), username: b.username },
        request.ip,
      );
      return { organization_id: result.organizationId, inbox_id: result.inboxId, api_key: result.apiKey };
    },
  });

  app.post('/v0/agent/human', {
    config: { agentSignup: true },
    schema: {
      tags,
      summary:
        'Attach (or replace, twice at most) the human of an unverified agent organization; a 6-digit code is mailed to it',
      body: AttachHumanBody,
      response: { 200: AttachHumanResponse, ...forbidden, ...errorResponses },
    },
    handler: async (request) => {
      const result = await agent.attachHuman(ownerOf(request), request.body.human_email);
      return { human_email: result.humanEmail, instructions: result.instructions };
    },
  });

  app.post('/v0/agent/verify', {
    config: { agentSignup: true },
    schema: {
      tags,
      summary: "Enter the code mailed to the human: lifts the organization's limits",
      body: VerifyBody,
      response: { 200: VerifyResponse, ...forbidden, ...errorResponses },
    },
    handler: async (request) => agent.verify(ownerOf(request), request.body.otp_code),
  });
}
