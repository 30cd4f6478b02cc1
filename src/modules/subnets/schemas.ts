import Joi from 'joi';
import { networkCidr } from '../../http/cidr.js';
import { body, cidr, description, entityId, listQuery, name, orderQuery, readOnlyNetworkId, sourceResponse, tagIds, timestamp, uuid } from '../../http/schemas.js';

export const SUBNET_TYPES = [
  'Internet', 'Remote', 'Gateway', 'VpnTunnel', 'Dmz', 'Lan', 'WiFi', 'IoT', 'Guest', 'DockerBridge',
  'MacVlan', 'IpVlan', 'Management', 'Storage', 'Unknown', 'None',
] as const;

const fields = {
  id: entityId(),
  cidr: networkCidr().required(),
  name: name().required(),
  description: description(),
  subnet_type: Joi.string().valid(...SUBNET_TYPES).default('None'),
  tags: tagIds().default([]),
  expected_updated_at: timestamp().allow(null),
  // A client may send back what a create or update answered: the warnings are the server's, ignored.
  warnings: Joi.any().strip(),
};
export const subnetCreate = body({ ...fields, id: Joi.any().strip(), network_id: uuid().required() });
export const subnetUpdate = body({ ...fields, network_id: readOnlyNetworkId('a subnet') });
export const subnetListQuery = listQuery({ ...orderQuery(['name', 'cidr', 'created_at', 'updated_at']), network_id: uuid() });

export const subnetResponse = Joi.object({
  id: uuid(), organization_id: uuid(), network_id: uuid(), cidr: cidr(), name: Joi.string(), description: Joi.string().allow(null),
  subnet_type: Joi.string(), source: sourceResponse(), tags: Joi.array().items(uuid()), lineage_id: uuid(), created_at: timestamp(),
  updated_at: timestamp(), valid_from: timestamp(), valid_to: timestamp().allow(null),
}).label('Subnet');

/** A create or update also reports the network's subnets that overlap this one (not refused: nesting is a real layout); no overlap, no field. */
export const subnetWriteResponse = subnetResponse.keys({
  warnings: Joi.array().items(Joi.object({
    code: Joi.string().valid('subnet_overlap'), subnet_id: uuid(), cidr: cidr(),
  }).label('SubnetWarning')).optional().description('Subnets of the same network that overlap this one (`subnet_overlap`): reported, not refused; absent when none'),
}).label('SubnetWritten');
