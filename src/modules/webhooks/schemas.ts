import Joi from 'joi';
import { name, pagination, timestamp, uuid } from '../../http/schemas.js';
import { WEBHOOK_PRESETS } from '../alerts/presets.js';
import { TYPE_PATTERN } from '../events/schemas.js';

export const webhookWrite = Joi.object({
  name: name().required(),
  url: Joi.string().uri({ scheme: ['http', 'https'] }).max(2000).required(),
  event_types: Joi.array().items(Joi.string().pattern(TYPE_PATTERN, 'event type or pattern (host.*)')).min(1).max(100).default(['*']),
  network_ids: Joi.array().items(uuid()).max(1000).allow(null).default(null).description('null: every network of the organization'),
  enabled: Joi.boolean().default(true),
  preset: Joi.string().valid(...WEBHOOK_PRESETS).default('generic')
    .description('The body each delivery has: generic (Standard Webhooks JSON), or the payload ntfy, Gotify, Slack, Discord or Microsoft Teams takes at its own webhook URL (alert digests as a title and one line per change)'),
});

export const webhookResponse = Joi.object({
  id: uuid(), organization_id: uuid(), name: Joi.string(), url: Joi.string(), event_types: Joi.array().items(Joi.string()),
  network_ids: Joi.array().items(uuid()).allow(null), enabled: Joi.boolean(), preset: Joi.string().valid(...WEBHOOK_PRESETS),
  disabled_reason: Joi.string().valid('gone', 'failing').allow(null).description('gone: the endpoint answered 410; failing: no success for 5 days'),
  failing_since: timestamp().allow(null), created_at: timestamp(), updated_at: timestamp(),
  secret: Joi.string().optional().description('whsec_…: only in the answers of create and rotate-secret'),
  previous_secret_expires_at: timestamp().optional().description('rotate-secret: until when the old secret keeps signing beside the new one'),
}).label('Webhook');

export const deliveryIdParams = Joi.object({ id: uuid().required(), delivery_id: uuid().required() });
export const deliveryListQuery = Joi.object({ ...pagination, status: Joi.string().valid('pending', 'delivered', 'failed') });
export const redeliverBody = Joi.object({ since: timestamp().required().description('Every delivery that failed since this instant is sent again') });

export const deliveryResponse = Joi.object({
  id: uuid().description('The webhook-id header: the same on every attempt'), webhook_id: uuid(), event_id: Joi.string().allow(null),
  type: Joi.string(), status: Joi.string().valid('pending', 'delivered', 'failed'), attempts: Joi.number().integer(),
  next_attempt_at: timestamp().allow(null), last_status_code: Joi.number().integer().allow(null), created_at: timestamp(), delivered_at: timestamp().allow(null),
  attempt_log: Joi.array().items(Joi.object({
    attempt: Joi.number().integer(), started_at: timestamp(), status_code: Joi.number().integer().allow(null), latency_ms: Joi.number().integer(),
    error: Joi.string().allow(null), response_excerpt: Joi.string().allow(null).description('The first 1 KB of the answer'),
  })),
}).label('WebhookDelivery');
