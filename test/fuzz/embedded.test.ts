/** The fuzz suite (suite.ts) on the embedded backend. */
import { fuzzSuite } from './suite.js';

fuzzSuite('embedded');
