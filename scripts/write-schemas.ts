// Writes schemas/*.schema.json from the zod schemas in src/run-format (npm run schemas).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  jsonSchemaFile,
  jsonSchemaText,
  PUBLISHED_SCHEMAS,
  type PublishedSchemaName,
} from '../src/run-format/json-schema.js';

const dir = fileURLToPath(new URL('../schemas/', import.meta.url));
mkdirSync(dir, { recursive: true });
for (const name of Object.keys(PUBLISHED_SCHEMAS) as PublishedSchemaName[]) {
  writeFileSync(join(dir, jsonSchemaFile(name)), jsonSchemaText(name));
  console.log(`wrote schemas/${jsonSchemaFile(name)}`);
}
