import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import { firstLoadBudget } from './build/first-load-budget.js';

const here = fileURLToPath(new URL('.', import.meta.url));
/** Where `npm run console:dev` sends API calls: a control plane started with `npm start`. */
const api = process.env.AUTHZ_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root: here,
  base: '/console/',
  plugins: [react(), firstLoadBudget(250 * 1024)],
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    port: 5173,
    strictPort: true,
    // The console in development talks to a control plane on another port through this proxy,
    // so that the page and the API stay one origin, as they are when the control plane serves it.
    // The control plane refuses a session cookie from another origin, so the proxy names its own.
    proxy: Object.fromEntries(['/authz.v1.', '/console/session'].map((path) => [path, {
      target: api,
      changeOrigin: true,
      configure: (proxy: { on(event: 'proxyReq', f: (req: { setHeader(name: string, value: string): void }) => void): void }) =>
        proxy.on('proxyReq', (req) => req.setHeader('origin', new URL(api).origin)),
    }])),
  },
});
