/**
 * Listing pages written as LookupResourcesResponse / LookupSubjectsResponse bytes (proto JSON,
 * REST JSON and binary) without building protobuf-es messages: the lean path answers every
 * listing this way, as it answers decisions with response-codec.ts.
 *
 * Why: protobuf-es writes a message by reflection; a page of 1,000 subjects cost 4–5 ms to write
 * and as much again for the client to read, more than deciding them. Written directly it costs
 * a fraction of that (listing-codec.test.ts compares the bytes with protobuf-es's for every field
 * combination and for generated pages).
 */
import type { SubjectGrant } from '../engine/mod.js';
import type { LookupResourceOut, LookupResourcesOut } from './lookup.js';
import type { LookupSubjectOut, LookupSubjectsOut } from './lookup-subjects.js';
import { stepOf, writeTraceSteps, Writer } from './response-codec.js';

/**
 * How a page's JSON is written: `connect` as proto JSON (every implicit field, the int64
 * revision as a string); `rest` as the REST gateway answers (the revision as a number, no
 * `nextCursor`: REST sends it as the `x-next-cursor` header).
 */
export type ListingJson = 'connect' | 'rest';

const str = JSON.stringify;

/** The page's tail: `nextCursor` (proto JSON only) and `revision`. */
function tailJson(nextCursor: string, revision: number, form: ListingJson): string {
  return form === 'rest' ? `"revision":${revision}}` : `"nextCursor":${str(nextCursor)},"revision":"${revision}"}`;
}

/** A LookupResources page as its JSON, fields in protobuf-es's order. */
export function resourcesJson(page: LookupResourcesOut, form: ListingJson): string {
  const parts = new Array<string>(page.resources.length);
  for (let i = 0; i < parts.length; i++) {
    const r = page.resources[i];
    parts[i] = `{"id":${str(r.id)},"externalResourceId":${str(r.externalResourceId)},"resourceType":${str(r.resourceType)},"ownerScopeId":${str(r.ownerScopeId)}}`;
  }
  return `{"resources":[${parts.join(',')}],${tailJson(page.nextCursor, page.revision, form)}`;
}

/** A LookupSubjects page as its JSON, fields in protobuf-es's order. */
export function subjectsJson(page: LookupSubjectsOut, form: ListingJson): string {
  const parts = new Array<string>(page.subjects.length);
  for (let i = 0; i < parts.length; i++) {
    const s = page.subjects[i];
    const grant = s.grant === undefined ? '' : `,"grant":${grantJson(s.grant)}`;
    parts[i] = `{"id":${str(s.id)},"externalId":${str(s.externalId)},"type":${str(s.type)}${grant}}`;
  }
  return `{"subjects":[${parts.join(',')}],${tailJson(page.nextCursor, page.revision, form)}`;
}

/** Grant's optional fields, by field number (2–8), with their JSON names. */
const GRANT_IDS = ['roleId', 'membershipId', 'tagBindingId', 'ownershipGrantId', 'sourceScopeId', 'ancestorResourceId', 'policyId'] as const;

function grantJson(g: SubjectGrant): string {
  let out = `{"reason":${str(g.reason)}`;
  for (const name of GRANT_IDS) {
    const v = g[name];
    if (v !== undefined) out += `,"${name}":${str(v)}`;
  }
  return `${out},"trace":${g.trace.length === 0 ? '[]' : str(g.trace.map(stepOf))}}`;
}

// LookupResourcesResponse: resources 1, next_cursor 2, revision 3. LookupResource: id 1,
// external_resource_id 2, resource_type 3, owner_scope_id 4. Implicit fields at their default
// are not written, as proto3 binary requires.

/** A LookupResources page as its binary message. */
export function resourcesBinary(page: LookupResourcesOut): Uint8Array {
  const w = new Writer(96 * page.resources.length + 64);
  for (const r of page.resources) writeResource(w, r);
  writeTail(w, page.nextCursor, page.revision);
  return w.finish();
}

function writeResource(w: Writer, r: LookupResourceOut): void {
  const at = w.open(1);
  w.implicitString(1, r.id);
  w.implicitString(2, r.externalResourceId);
  w.implicitString(3, r.resourceType);
  w.implicitString(4, r.ownerScopeId);
  w.close(at);
}

function writeTail(w: Writer, nextCursor: string, revision: number): void {
  w.implicitString(2, nextCursor);
  if (revision !== 0) w.uint(3, revision);
}

// LookupSubjectsResponse: subjects 1, next_cursor 2, revision 3. LookupSubject: id 1,
// external_id 2, type 3, grant 4 (written when set, even empty).

/** A LookupSubjects page as its binary message. */
export function subjectsBinary(page: LookupSubjectsOut): Uint8Array {
  const w = new Writer(64 * page.subjects.length + 64);
  for (const s of page.subjects) writeSubject(w, s);
  writeTail(w, page.nextCursor, page.revision);
  return w.finish();
}

function writeSubject(w: Writer, s: LookupSubjectOut): void {
  const at = w.open(1);
  w.implicitString(1, s.id);
  w.implicitString(2, s.externalId);
  w.implicitString(3, s.type);
  if (s.grant !== undefined) {
    const grant = w.open(4);
    writeGrant(w, s.grant);
    w.close(grant);
  }
  w.close(at);
}

// Grant: reason 1; role_id … policy_id 2–8 (optional: written when set, even empty); trace 9
// (TraceStep: step 1, result 2, message 3, details 4, a Struct always present, as Evaluate's).
function writeGrant(w: Writer, g: SubjectGrant): void {
  w.implicitString(1, g.reason);
  for (let i = 0; i < GRANT_IDS.length; i++) {
    const v = g[GRANT_IDS[i]];
    if (v !== undefined) w.string(i + 2, v);
  }
  writeTraceSteps(w, 9, g.trace);
}
