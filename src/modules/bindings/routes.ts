import { defineRoutes } from '../../http/pipeline.js';

export const bindingRoutes = defineRoutes([]);
