import { describe, expect, it } from 'vitest';
import { CONTROL_PLANE_NODE_FLAGS, missingNodeFlags } from './node-flags.js';

describe('control plane V8 flags', () => {
  it('names each flag node was started without', () => {
    expect(CONTROL_PLANE_NODE_FLAGS).toContain('--no-memory-reducer');
    expect(missingNodeFlags([])).toEqual([...CONTROL_PLANE_NODE_FLAGS]);
    expect(missingNodeFlags(['--import', 'tsx', ...CONTROL_PLANE_NODE_FLAGS])).toEqual([]);
    // A flag's value or a look-alike is not the flag.
    expect(missingNodeFlags(['--no-memory-reducer=false', '--memory-reducer'])).toEqual(['--no-memory-reducer']);
  });
});
