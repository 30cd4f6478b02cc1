// Every endpoint of the API, module by module.
import type { RouteDef } from './http/pipeline.js';
import { systemRoutes } from './modules/system/routes.js';
import { accountRoutes } from './modules/accounts/routes.js';
import { apiKeyRoutes } from './modules/apiKeys/routes.js';
import { networkRoutes } from './modules/networks/routes.js';
import { tagRoutes } from './modules/tags/routes.js';
import { hostImportRoutes, hostRoutes } from './modules/hosts/routes.js';
import { subnetRoutes } from './modules/subnets/routes.js';
import { ipAddressRoutes } from './modules/ipAddresses/routes.js';
import { portRoutes } from './modules/ports/routes.js';
import { serviceRoutes } from './modules/services/routes.js';
import { bindingRoutes } from './modules/bindings/routes.js';
import { interfaceRoutes } from './modules/interfaces/routes.js';
import { dependencyRoutes } from './modules/dependencies/routes.js';
import { daemonKeyRoutes } from './modules/daemonKeys/routes.js';
import { daemonProtocolRoutes, daemonRoutes } from './modules/daemons/routes.js';
import { discoveryRoutes } from './modules/discovery/routes.js';
import { topologyRoutes } from './modules/topology/routes.js';
import { eventRoutes } from './modules/events/routes.js';
import { webhookRoutes } from './modules/webhooks/routes.js';
import { downloadRoutes } from './modules/downloads/routes.js';
import { serviceDefinitionRoutes } from './modules/serviceDefinitions/routes.js';
import { scheduleRoutes } from './modules/schedules/routes.js';
import { alertRoutes } from './modules/alerts/routes.js';
import { changesRoutes } from './modules/changes/routes.js';
import { sharedMapRoutes, shareLinkRoutes } from './modules/shareLinks/routes.js';
import { searchRoutes } from './modules/search/routes.js';

export const routes: RouteDef[] = [
  ...systemRoutes, ...accountRoutes, ...apiKeyRoutes, ...networkRoutes, ...tagRoutes, ...subnetRoutes, ...hostRoutes, ...hostImportRoutes,
  ...ipAddressRoutes, ...portRoutes, ...serviceRoutes, ...bindingRoutes, ...interfaceRoutes, ...dependencyRoutes,
  ...daemonKeyRoutes, ...daemonRoutes, ...daemonProtocolRoutes, ...discoveryRoutes, ...topologyRoutes,
  ...eventRoutes, ...webhookRoutes, ...downloadRoutes, ...serviceDefinitionRoutes, ...scheduleRoutes, ...changesRoutes, ...searchRoutes,
  ...alertRoutes, ...shareLinkRoutes, ...sharedMapRoutes,
];
