// Preload (node --import) that prints, at exit, every file of this repository the process loaded.
import { registerHooks } from 'node:module';

const loaded = new Set();
registerHooks({
  load(url, context, next) {
    loaded.add(url);
    return next(url, context);
  },
});
const root = new URL('../../', import.meta.url).href;
process.on('exit', () => {
  const files = [...loaded].filter((url) => url.startsWith(root) && !url.includes('/node_modules/')).map((url) => url.slice(root.length));
  process.stdout.write(`LOADED ${JSON.stringify(files.sort())}\n`);
});
