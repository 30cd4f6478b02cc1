import { defineRoutes } from '../../http/pipeline.js';

export const portRoutes = defineRoutes([]);
