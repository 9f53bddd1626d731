import { describe, expect, it } from 'vitest';
import { Counter, Histogram, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** The same updates through prom-client's own metrics and through the hot ones give the same page. */
describe('hot metrics', () => {
  it('expose exactly what prom-client would for the same counts and observations', async () => {
    const plain = new Registry();
    const hot = new Registry();
    const c1 = new Counter({ name: 'x_total', help: 'h', labelNames: ['a', 'b'], registers: [plain] });
    const h1 = new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['a', 'b'], buckets: BUCKETS, registers: [plain] });
    const c2 = new HotCounter(hot, { name: 'x_total', help: 'h', labelNames: ['a', 'b'] });
    const h2 = new HotHistogram(hot, { name: 'x_seconds', help: 'h', labelNames: ['a', 'b'], buckets: BUCKETS });
    const kept = { c: c2.child({ a: 'k', b: 'ept' }), h: h2.child({ a: 'k', b: 'ept' }) };
    const values = [0, 0.0005, 0.001, 0.0011, 0.01, 0.05, 0.1, 0.5, 1, 1.5, 99];
    for (const [i, v] of values.entries()) {
      const labels = { a: i % 2 ? 'odd' : 'even', b: 'x"y\\z' };
      c1.inc(labels);
      h1.observe(labels, v);
      c2.inc(labels);
      h2.observe(labels, v);
      c1.inc({ a: 'k', b: 'ept' }, 2);
      h1.observe({ a: 'k', b: 'ept' }, v);
      kept.c.inc(2);
      kept.h.observe(v);
    }
    const sorted = (text: string) => text.split('\n').filter(Boolean).sort();
    expect(sorted(await hot.metrics())).toEqual(sorted(await plain.metrics()));
    // Counts are not lost between scrapes, nor counted twice.
    c1.inc({ a: 'odd', b: 'x"y\\z' });
    c2.inc({ a: 'odd', b: 'x"y\\z' });
    expect(sorted(await hot.metrics())).toEqual(sorted(await plain.metrics()));
    expect(sorted(await hot.metrics())).toEqual(sorted(await plain.metrics()));
  });
});
