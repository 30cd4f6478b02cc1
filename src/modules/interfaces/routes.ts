import { defineRoutes } from '../../http/pipeline.js';

export const interfaceRoutes = defineRoutes([]);
