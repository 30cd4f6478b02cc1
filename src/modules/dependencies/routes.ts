import { defineRoutes } from '../../http/pipeline.js';

export const dependencyRoutes = defineRoutes([]);
