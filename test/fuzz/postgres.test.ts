/** The fuzz suite (suite.ts) on the postgres backend. */
import { fuzzSuite } from './suite.js';

fuzzSuite('postgres');
