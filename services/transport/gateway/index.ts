export * from './gateway.js';
export * from './routes.js';
export { int64ToNumbers, checkMessage, valueFromString } from './json.js';
export { BodyTooLarge, readBody, readJsonBody } from '../body.js';
