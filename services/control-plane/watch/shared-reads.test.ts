import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { ChangeSchema, RevisionChangesSchema, type RevisionChanges } from '../../../gen/authz/v1/snapshot_service_pb.js';
import { revisionBytes } from './changes.js';
import { SharedRevisionReads } from './shared-reads.js';

/** A change log: revisions from `horizon + 1` to `head`, each with one row of `pad` bytes. */
class Log {
  head = 0;
  horizon = 0;
  reads: number[] = [];
  constructor(private readonly pad = 10) {}
  revision(tenantId: string, r: number): RevisionChanges {
    return create(RevisionChangesSchema, { tenantId, revision: BigInt(r), changes: [create(ChangeSchema, { kind: 'resource', id: `r${r}`, json: 'x'.repeat(this.pad) })] });
  }
  /** As readRevisions: whole revisions after `after`, at most `limit` of them here. */
  read = async (tenantId: string, after: number, limit: number): Promise<RevisionChanges[]> => {
    this.reads.push(after);
    await new Promise((r) => setTimeout(r, 1));
    const out: RevisionChanges[] = [];
    for (let r = Math.max(after, this.horizon) + 1; r <= this.head && out.length < limit; r++) out.push(this.revision(tenantId, r));
    return out;
  };
}
const revs = (xs: RevisionChanges[]) => xs.map((x) => Number(x.revision));
/** Tenants t, a and b have streams open. */
const watching = (reads: SharedRevisionReads) => {
  for (const t of ['t', 'a', 'b']) reads.watch(t);
  return reads;
};

describe('change-log reads shared by the streams of a tenant', () => {
  it('streams asking for the same revisions together make one read', async () => {
    const log = new Log();
    const reads = watching(new SharedRevisionReads(log.read, 1 << 20));
    log.head = 5;
    const answers = await Promise.all(Array.from({ length: 50 }, () => reads.read('t', 0, 100)));
    for (const a of answers) expect(revs(a)).toEqual([1, 2, 3, 4, 5]);
    expect(log.reads).toEqual([0]);
    expect([reads.databaseReads, reads.sharedReads]).toEqual([1, 49]);
  });

  it('serves a later stream from the window, from any revision it holds, and reads past it', async () => {
    const log = new Log();
    const reads = watching(new SharedRevisionReads(log.read, 1 << 20));
    log.head = 5;
    await reads.read('t', 0, 100);
    expect(revs(await reads.read('t', 3, 100))).toEqual([4, 5]);
    expect(revs(await reads.read('t', 0, 100))).toEqual([1, 2, 3, 4, 5]);
    expect(log.reads).toEqual([0]);
    // At its end: the database, and what it answers continues the window.
    log.head = 7;
    expect(revs(await reads.read('t', 5, 100))).toEqual([6, 7]);
    expect(revs(await reads.read('t', 2, 100))).toEqual([3, 4, 5, 6, 7]);
    expect(log.reads).toEqual([0, 5]);
    // Nothing new: asked each time (the caller asks only when it knows of a newer revision).
    expect(await reads.read('t', 7, 100)).toEqual([]);
    expect(log.reads).toEqual([0, 5, 7]);
  });

  it('keeps tenants apart', async () => {
    const log = new Log();
    const reads = watching(new SharedRevisionReads(log.read, 1 << 20));
    log.head = 3;
    await reads.read('a', 0, 100);
    const b = await reads.read('b', 0, 100);
    expect(b.every((x) => x.tenantId === 'b')).toBe(true);
    expect(log.reads).toEqual([0, 0]);
  });

  it('an older read leaves the window; one past its end replaces it', async () => {
    const log = new Log();
    const reads = watching(new SharedRevisionReads(log.read, 1 << 20));
    log.head = 10;
    await reads.read('t', 6, 2); // window 7..8
    expect(revs(await reads.read('t', 1, 3))).toEqual([2, 3, 4]);
    expect(revs(await reads.read('t', 7, 100))).toEqual([8]);
    expect(log.reads).toEqual([6, 1]);
    expect(revs(await reads.read('t', 9, 100))).toEqual([10]); // past 8: the window is 10 now
    expect(revs(await reads.read('t', 8, 100))).toEqual([9, 10]);
    expect(log.reads).toEqual([6, 1, 9, 8]);
  });

  it('does not keep a read that skips revisions (a compacted log): the caller snapshots', async () => {
    const log = new Log();
    const reads = watching(new SharedRevisionReads(log.read, 1 << 20));
    log.head = 10;
    log.horizon = 6;
    expect(revs(await reads.read('t', 2, 100))).toEqual([7, 8, 9, 10]);
    expect(reads.tenants).toBe(0);
    expect(revs(await reads.read('t', 2, 100))).toEqual([7, 8, 9, 10]);
    expect(log.reads).toEqual([2, 2]);
  });

  it('holds at most its bytes per tenant, dropping the oldest, and forgets a tenant', async () => {
    const log = new Log(1000);
    const one = revisionBytes(log.revision('t', 1));
    const reads = watching(new SharedRevisionReads(log.read, 3 * one + 8)); // three revisions (ids of two digits are a byte longer)
    log.head = 10;
    await reads.read('t', 0, 100);
    // 8..10 kept: from 7 on the window answers, before it the database.
    expect(revs(await reads.read('t', 7, 100))).toEqual([8, 9, 10]);
    expect(log.reads).toEqual([0]);
    expect(revs(await reads.read('t', 6, 100))).toEqual([7, 8, 9, 10]);
    expect(log.reads).toEqual([0, 6]);
    reads.forget('t');
    expect(reads.tenants).toBe(0);
  });

  it('keeps nothing for a tenant whose streams ended, even a read in flight as the last one ended', async () => {
    const log = new Log();
    const reads = watching(new SharedRevisionReads(log.read, 1 << 20));
    log.head = 3;
    const inFlight = reads.read('t', 0, 100);
    reads.forget('t');
    expect(revs(await inFlight)).toEqual([1, 2, 3]);
    expect(reads.tenants).toBe(0);
    await reads.read('x', 0, 100); // never watched
    expect(reads.tenants).toBe(0);
  });

  it('a failed read fails every stream that joined it, and the next one asks again', async () => {
    let fail = true;
    const log = new Log();
    log.head = 2;
    const reads = watching(new SharedRevisionReads(async (...a) => {
      if (fail) {
        await new Promise((r) => setTimeout(r, 1));
        throw new Error('connection lost');
      }
      return log.read(...a);
    }, 1 << 20));
    const both = [reads.read('t', 0, 100), reads.read('t', 0, 100)];
    for (const p of both) await expect(p).rejects.toThrow('connection lost');
    fail = false;
    expect(revs(await reads.read('t', 0, 100))).toEqual([1, 2]);
  });
});
