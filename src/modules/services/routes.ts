import { defineRoutes } from '../../http/pipeline.js';

export const serviceRoutes = defineRoutes([]);
