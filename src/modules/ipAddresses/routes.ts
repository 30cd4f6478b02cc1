import { defineRoutes } from '../../http/pipeline.js';

export const ipAddressRoutes = defineRoutes([]);
