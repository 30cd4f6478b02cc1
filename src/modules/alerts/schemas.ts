import Joi from 'joi';
import { entityId, pagination, timestamp, uuid } from '../../http/schemas.js';
import { isTimeZone } from '../schedules/timing.js';
import { ALERT_KINDS } from './evaluate.js';

export const MAX_RULES_PER_NETWORK = 100;
const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;

const quietHours = Joi.object({
  start: Joi.string().pattern(HHMM, 'HH:MM').required(),
  end: Joi.string().pattern(HHMM, 'HH:MM').required(),
  timezone: Joi.string().max(64).custom((value: string, helpers) => (isTimeZone(value) ? value : helpers.error('timezone.unknown')))
    .messages({ 'timezone.unknown': '{{#label}} is not a known IANA time zone (e.g. UTC, Europe/Paris)' }).default('UTC'),
}).allow(null).description('A daily window (start–end, crossing midnight when end < start) in an IANA time zone: nothing is sent then; the digest goes when it ends');

export const alertRuleWrite = Joi.object({
  id: entityId(),
  network_id: uuid().required(),
  kind: Joi.string().valid(...ALERT_KINDS).required()
    .description('host_new, host_offline, host_online (back online), service_added, service_removed, port_added, port_removed, mac_changed (an address answering with another MAC), vendor_new'),
  enabled: Joi.boolean().default(true),
  offline_delay_minutes: Joi.number().integer().min(0).max(10080).default(0)
    .description('host_offline only: how long a host must stay offline before it is reported (a host back sooner gives nothing)'),
  quiet_hours: quietHours.default(null),
  webhook_ids: Joi.array().items(uuid()).max(20).unique().default([]).description('Webhook endpoints of the organization that get the digest (a delivery of type alert.digest, signed like every delivery; the endpoint\'s preset shapes it). An endpoint made for alerts alone subscribes to event_types ["alert.digest"]: no event has that type'),
  email_to: Joi.array().items(Joi.string().email({ tlds: false }).max(254)).max(20).unique().default([]).description('Addresses that get the digest by e-mail (SMTP_URL)'),
}).custom((v, h) => (v.kind !== 'host_offline' && v.offline_delay_minutes ? h.error('delay.kind') : v))
  .messages({ 'delay.kind': 'offline_delay_minutes is for host_offline rules only' })
  .example({ network_id: '00000000-0000-4000-8000-000000000001', kind: 'host_offline', offline_delay_minutes: 10, email_to: ['ops@example.com'] });

export const alertRuleListQuery = Joi.object({ ...pagination, network_id: uuid() });

export const alertRuleResponse = Joi.object({
  id: uuid(), organization_id: uuid(), network_id: uuid(), kind: Joi.string().valid(...ALERT_KINDS), enabled: Joi.boolean(), offline_delay_minutes: Joi.number().integer(),
  quiet_hours: Joi.object({ start: Joi.string(), end: Joi.string(), timezone: Joi.string() }).allow(null),
  webhook_ids: Joi.array().items(uuid()), email_to: Joi.array().items(Joi.string()), created_at: timestamp(), updated_at: timestamp(),
}).label('AlertRule');

export const alertListQuery = Joi.object({
  ...pagination,
  network_id: uuid(),
  acknowledged: Joi.boolean().description('true: only acknowledged digests; false: only those not acknowledged yet'),
});

export const alertItem = Joi.object({
  kind: Joi.string().valid(...ALERT_KINDS), host_id: uuid().allow(null), host_name: Joi.string().allow(null),
  ip: Joi.string().allow(null).optional(),
  since: Joi.string().allow(null).optional().description('host_offline, host_online: when the host went offline'),
  service_id: uuid().optional(), service_name: Joi.string().optional(), port_id: uuid().optional(), port: Joi.number().integer().optional(), protocol: Joi.string().optional(),
  mac: Joi.string().allow(null).optional(), previous_mac: Joi.string().allow(null).optional(), vendor: Joi.string().allow(null).optional(),
}).label('AlertItem');

export const alertResponse = Joi.object({
  id: uuid(), organization_id: uuid(), network_id: uuid(), session_id: uuid().allow(null).description('The discovery session whose end made it (null: an offline delay that passed later)'),
  items: Joi.array().items(alertItem), lines: Joi.array().items(Joi.string()).description('The items in words, as the messages say them'),
  held_until: timestamp().allow(null).description('Every channel was in its quiet hours: sent then'),
  created_at: timestamp(), acknowledged_at: timestamp().allow(null), acknowledged_by: uuid().allow(null),
}).label('Alert');
