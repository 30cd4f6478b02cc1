import Joi from 'joi';
import { defineRoutes } from '../../http/pipeline.js';
import { bulkRoutes } from '../../http/resourceRoutes.js';
import { Page } from '../../http/envelope.js';
import { idList, idParams } from '../../http/schemas.js';
import { deliveryIdParams, deliveryListQuery, deliveryResponse, redeliverBody, webhookResponse, webhookWrite } from './schemas.js';
import { webhookService } from './service.js';


const webhookRoutesDeclared = defineRoutes([
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'createWebhook', method: 'post', path: '/api/v1/webhooks', status: 201, body: webhookWrite, response: webhookResponse,
    summary: 'Subscribe an endpoint to events (types or `host.*` patterns, networks); the signing secret (whsec_…) is in this answer only',
    handler: ({ db, scope, body, services }) => webhookService.create(db, scope, services.config, body),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'listWebhooks', method: 'get', path: '/api/v1/webhooks', response: webhookResponse, list: true, summary: 'List the organization’s webhook endpoints',
    query: Joi.object({ ids: idList() }),
    handler: ({ db, scope, query }) => webhookService.list(db, scope, query.ids),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'getWebhook', method: 'get', path: '/api/v1/webhooks/:id', params: idParams, response: webhookResponse, summary: 'Get a webhook endpoint',
    handler: ({ db, scope, params }) => webhookService.get(db, scope, params.id),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'updateWebhook', method: 'put', path: '/api/v1/webhooks/:id', params: idParams, body: webhookWrite, response: webhookResponse,
    summary: 'Replace a webhook endpoint’s settings (enabled: true re-enables one disabled by failures)',
    handler: ({ db, scope, params, body, services }) => webhookService.update(db, scope, services.config, params.id, body),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'deleteWebhook', method: 'delete', path: '/api/v1/webhooks/:id', params: idParams, summary: 'Delete a webhook endpoint and its delivery log',
    handler: async ({ db, scope, params }) => { await webhookService.remove(db, scope, params.id); return null; },
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'rotateWebhookSecret', method: 'post', path: '/api/v1/webhooks/:id/rotate-secret', params: idParams, response: webhookResponse,
    summary: 'A new signing secret (shown once); the old one keeps signing beside it for 24 h (two signatures in webhook-signature)',
    handler: ({ db, scope, params }) => webhookService.rotateSecret(db, scope, params.id),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'testWebhook', method: 'post', path: '/api/v1/webhooks/:id/test', params: idParams, status: 202, response: Joi.object({ id: Joi.string(), delivery_id: Joi.string() }),
    summary: 'Send a signed `webhook.ping` now; its attempts appear in the delivery log',
    handler: ({ db, scope, params, services }) => webhookService.ping(db, scope, services.queues, params.id),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'listWebhookDeliveries', method: 'get', path: '/api/v1/webhooks/:id/deliveries', params: idParams, query: deliveryListQuery, response: deliveryResponse, paginated: true,
    summary: 'The delivery log, newest first: each delivery with every attempt (status code, latency, error, first 1 KB of the answer)',
    handler: ({ db, scope, params, query }) => webhookService.deliveries(db, scope, params.id, query as { limit: number; offset: number; status?: string }),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'redeliverWebhookDelivery', method: 'post', path: '/api/v1/webhooks/:id/deliveries/:delivery_id/redeliver', params: deliveryIdParams, status: 202,
    summary: 'Send one delivery again (same webhook-id)',
    handler: ({ db, scope, params, services }) => webhookService.redeliver(db, scope, services.queues, params.id, params.delivery_id),
  },
  {
    group: 'Webhooks', auth: 'Admin', organizationWide: true, operationId: 'redeliverFailedWebhookDeliveries', method: 'post', path: '/api/v1/webhooks/:id/redeliver', params: idParams, body: redeliverBody, status: 202,
    summary: 'Send again every delivery of this endpoint that failed since an instant',
    handler: ({ db, scope, params, body, services }) => webhookService.redeliverFailed(db, scope, services.queues, params.id, body.since),
  },
]);

export const webhookRoutes = [...webhookRoutesDeclared, ...bulkRoutes(webhookRoutesDeclared, {
  path: '/api/v1/webhooks', group: 'Webhooks', entity: ['Webhook', 'Webhooks'],
  schemas: { list: Joi.object({ limit: Joi.number(), offset: Joi.number() }), response: webhookResponse },
  // The endpoints of an organization are few: one page.
  list: async (db, scope, q) => {
    const all = q.offset ? [] : await webhookService.list(db, scope);
    return Page.of(all, all.length, 0, 0);
  },
  remove: (db, scope, id) => webhookService.remove(db, scope, id),
})];
