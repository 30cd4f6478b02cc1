import Joi from 'joi';
import { at, body, commaList, timestamp, uuid } from '../../http/schemas.js';
import { VIEWS } from '../topology/graph.js';
import { topologyResponse } from '../topology/schemas.js';

/** The longest a link may live: it is a credential nobody signs in with, so it always ends. */
export const MAX_SHARE_DAYS = 90;
export const SHARE_TOKEN = /^scp_s_[0-9A-Za-z]{32}$/;
const NODE_ID = /^[a-z_]+:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const shareLinkParams = Joi.object({ id: uuid().required(), share_link_id: uuid().required() });

export const shareLinkCreate = body({
  view: Joi.string().valid(...VIEWS).default('l3').description('The view the link shows'),
  at: at().allow(null).default(null).description('A fixed instant the link shows the map as of (null: live, following changes)'),
  expires_at: timestamp().required().description(`When the link stops working: in the future, at most ${MAX_SHARE_DAYS} days ahead`),
  label: Joi.string().trim().max(100).allow(null, '').empty('').default(null).description('What the link is for (a wall screen, a wiki page)'),
}).example({ view: 'l3', expires_at: '2026-12-31T00:00:00Z', label: 'NOC wall screen' });

export const shareLinkListQuery = Joi.object({
  include_inactive: Joi.boolean().default(false).description('Also the revoked and expired links (newest first either way)'),
});

export const shareLinkResponse = Joi.object({
  id: uuid(), organization_id: uuid(), network_id: uuid(),
  label: Joi.string().allow(null),
  view: Joi.string().valid(...VIEWS),
  at: timestamp().allow(null).description('The fixed instant shown (null: live)'),
  expires_at: timestamp(),
  status: Joi.string().valid('active', 'expired', 'revoked'),
  created_by: uuid(), created_at: timestamp(),
  revoked_at: timestamp().allow(null),
  last_used_at: timestamp().allow(null).description('The last read through the link (written at most once a minute)'),
}).label('ShareLink');

export const shareLinkCreated = Joi.object({
  share_link: shareLinkResponse,
  token: Joi.string().pattern(SHARE_TOKEN).description('Shown only in this response: the page is /share/<token>'),
}).label('ShareLinkCreated');

// The public side: the token in the path is the whole credential. A malformed token is answered as
// an unknown one (404), not as a validation error.
export const shareTokenParams = Joi.object({ token: Joi.string().max(200).required() });

/** Only what cannot widen what the link shows: which containers are open. Anything else (network_id, view, at, include_hidden) is refused. */
export const sharedTopologyQuery = Joi.object({
  expand: commaList(NODE_ID, 'a container node id (<kind>:<uuid>)', 1000),
});

export const sharedTopologyResponse = topologyResponse.keys({
  share: Joi.object({
    network_name: Joi.string(), label: Joi.string().allow(null), view: Joi.string(), at: timestamp().allow(null), expires_at: timestamp(),
  }).description('What the link shows, and until when'),
}).label('SharedTopology');
