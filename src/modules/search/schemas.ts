import Joi from 'joi';
import { uuid } from '../../http/schemas.js';

export const SEARCH_KINDS = ['host', 'ip_address', 'mac_address', 'service', 'subnet', 'tag'] as const;
export const SEARCH_MAX_RESULTS = 50;

export const searchQuery = Joi.object({
  q: Joi.string().trim().min(1).max(100).required()
    .description('What to look for: part of a host name or hostname, the start of an address, part of a MAC (any separators), part of a service, subnet or tag name'),
  network_id: uuid().description('Only this network (left out: every network the caller may see)'),
  limit: Joi.number().integer().min(1).max(SEARCH_MAX_RESULTS).default(20),
});

export const searchResult = Joi.object({
  kind: Joi.string().valid(...SEARCH_KINDS),
  id: uuid().description('The entity found (for an address or a MAC, the address)'),
  network_id: uuid().allow(null).description('Its network (null for a tag: tags belong to the organization)'),
  host_id: uuid().allow(null).description('The host it belongs to (host, address, MAC, service)'),
  label: Joi.string().description('What to show: the host, address, service, subnet or tag name'),
  detail: Joi.string().allow(null).description('Where it is: the host of an address or service, a subnet\'s CIDR'),
  match: Joi.string().valid('exact', 'prefix', 'contains').description('How the text matched (results are ordered by it, then by kind and label)'),
}).label('SearchResult');
