// A host as answered, with its children: each child in the shape its own resource answers, so the
// OpenAPI document names one `Port`, one `Service`… (this file, not schemas.ts, imports the child
// modules' schemas, which import the host's input schemas).
import Joi from 'joi';
import { NAME_SOURCES } from '../discovery/vocabulary.js';
import { sourceResponse, timestamp, uuid, virtualizationResponse } from '../../http/schemas.js';
import { interfaceResponse } from '../interfaces/schemas.js';
import { ipAddressResponse } from '../ipAddresses/schemas.js';
import { portResponse } from '../ports/schemas.js';
import { serviceResponse } from '../services/schemas.js';
import { HOST_STATUSES } from './presence.js';

const ts = () => timestamp().allow(null);
export const hostResponse = Joi.object({
  id: uuid(), name: Joi.string(), hostname: Joi.string().allow(null), description: Joi.string().allow(null), hidden: Joi.boolean(),
  network_id: uuid(), organization_id: uuid(), tags: Joi.array().items(uuid()), source: sourceResponse(), virtualization: virtualizationResponse(),
  credential_assignments: Joi.array().items(Joi.object({ credential_id: uuid() }).unknown(true)),
  // Set by discovery only: read-only, ignored in a request body.
  hostname_source: Joi.string().valid('ptr', 'mdns', 'snmp').allow(null).description('Where discovery found `hostname`: a PTR record, mDNS or SNMP sysName (read-only)'),
  name_source: Joi.string().valid(...NAME_SOURCES).allow(null)
    .description('Where discovery took `name` from (hostname, certificate, title, service, address): discovery renames such a host when its evidence changes; null for a name a person gave, which discovery never replaces (read-only)'),
  device_type: Joi.string().allow(null).description('The kind of device the evidence names: NAS, Printer, Router, Camera… (read-only, from discovery)'),
  device_model: Joi.string().allow(null).description('The device\'s maker and model as the evidence names it (read-only, from discovery)'),
  os_name: Joi.string().allow(null).description('The operating system the evidence names, e.g. "Debian Linux" (read-only, from discovery)'),
  os_version: Joi.string().allow(null).description('Its version when the evidence says it (read-only, from discovery)'),
  os_confidence: Joi.string().valid('Low', 'Medium', 'High', 'Certain').allow(null).description('How sure the OS evidence is (read-only, from discovery)'),
  sys_descr: Joi.string().allow(null).description('SNMP sysDescr (read-only, from discovery)'),
  sys_object_id: Joi.string().allow(null).description('SNMP sysObjectID (read-only, from discovery)'),
  sys_location: Joi.string().allow(null).description('SNMP sysLocation (read-only, from discovery)'),
  sys_contact: Joi.string().allow(null).description('SNMP sysContact (read-only, from discovery)'),
  chassis_id: Joi.string().allow(null).description('LLDP chassis id of the host itself (read-only, from discovery)'),
  offline_at: ts().description('Since when completed scans of its subnet have not seen it (null: online; read-only, from discovery)'),
  ignored: Joi.boolean().description('A person said to ignore it: never alerted on, hidden, and kept ignored whatever discovery finds'),
  status: Joi.string().valid(...HOST_STATUSES)
    .description('online; offline (a completed scan of its subnet missed it); stale (offline for longer than its network\'s host_expiry_days); ignored (read-only, derived)'),
  // Children as of the same instant as the host (now, `at`, or a history entry's valid_from).
  ip_addresses: Joi.array().items(ipAddressResponse).optional(),
  ports: Joi.array().items(portResponse).optional(),
  services: Joi.array().items(serviceResponse).optional(),
  interfaces: Joi.array().items(interfaceResponse).optional(),
  first_discovery_id: uuid().allow(null), last_discovery_id: uuid().allow(null), last_seen_at: ts(),
  lineage_id: uuid().allow(null), created_at: timestamp(), updated_at: timestamp(), valid_from: timestamp(), valid_to: ts(),
}).label('Host');
