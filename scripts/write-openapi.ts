// Writes the OpenAPI document the web process serves at /openapi.json (for linting and clients).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { openApiDocument } from '../src/app/routes.ts';
import { packageVersion } from '../src/web.ts';

const out = path.resolve(process.argv[2] ?? '.data/openapi.json');
await mkdir(path.dirname(out), { recursive: true });
await writeFile(out, JSON.stringify(openApiDocument(packageVersion), null, 2));
process.stdout.write(`${out}\n`);
