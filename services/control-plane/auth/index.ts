export * from './principal.js';
export * from './interceptor.js';
