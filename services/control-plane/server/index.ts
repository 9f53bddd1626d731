export * from './server.js';
export * from './revision.js';
