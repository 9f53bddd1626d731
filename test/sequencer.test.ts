import { existsSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';

it('test/durations.json names only test files that exist, with positive seconds', () => {
  const durations: Record<string, number> = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8'));
  expect(Object.keys(durations).length).toBeGreaterThan(10);
  for (const [file, seconds] of Object.entries(durations)) {
    expect(file, 'a file that was renamed or removed: npm run test:durations -- <report>').toMatch(/\.test\.tsx?$/);
    expect(existsSync(new URL(`../${file}`, import.meta.url)), file).toBe(true);
    expect(seconds).toBeGreaterThan(0);
  }
});
