import Joi from 'joi';
import { resourceRoutes } from '../../http/resourceRoutes.js';
import { daemonSubnetBody } from '../discovery/schemas.js';
import { daemonContext, ingestSubnet } from '../discovery/ingest.js';
import { subnetCreate, subnetListQuery, subnetResponse, subnetUpdate, subnetWriteResponse } from './schemas.js';
import { subnetService } from './service.js';
import { subnetTable } from './table.js';

export const subnetRoutes = resourceRoutes({
  path: '/api/v1/subnets', group: 'Subnets', entity: ['Subnet', 'Subnets'], noun: 'a subnet', service: subnetService, writeRole: 'Member', bulkCreate: true,
  lock: (db, scope, id) => subnetTable.get(db, scope, id, undefined, true),
  schemas: { list: subnetListQuery, create: subnetCreate, update: subnetUpdate, response: subnetResponse },
  extend: {
    // A daemon gets every subnet of its network, unpaged (reference daemon-protocol §1.1 step 4).
    list: { daemon: { query: Joi.object().unknown(true), handler: ({ db, scope }) => subnetService.listForDaemon(db, scope) } },
    // A daemon's subnet: the network's subnet with that CIDR when there is one, else created (reference §2.1).
    create: { response: subnetWriteResponse, summary: 'Create a subnet (a CIDR with host bits set is 400; overlapping subnets of the network come back in `warnings`)', daemon: { status: 200, body: daemonSubnetBody, handler: ({ db, scope, body }) => ingestSubnet(db, daemonContext(scope), body) } },
    update: { response: subnetWriteResponse, summary: 'Replace a subnet (overlapping subnets of the network come back in `warnings`)' },
    patch: { response: subnetWriteResponse },
    remove: { summary: 'Delete an unused subnet' },
  },
});
