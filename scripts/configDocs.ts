// Writes docs/configuration.md from the declaration of every environment variable
// (src/core/settings.ts). test/core/settings.spec.ts fails when the file is not what this writes.
import { writeFileSync } from 'node:fs';
import { configurationMarkdown } from '../src/core/settings.js';

const file = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(file, configurationMarkdown());
console.log(`wrote ${file.pathname}`);
