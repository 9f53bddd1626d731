/**
 * The decision playground and the access view against the seeded tenant
 * (examples/documents/model.yaml; expected answers from its tests.yaml).
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Page } from '@playwright/test';
import { expectAccessible } from './axe.js';
import { expect, openView, screenshot, signIn, test, type Backend } from './backends.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** The seeded tenant's scope ids by path (/, /eng, /eng/platform, …), read over REST. */
async function scopeIds(backend: Backend): Promise<Record<string, string>> {
  const res = await fetch(`${backend.url}/scopes?tenantId=${backend.tenantId}`, { headers: { 'x-api-key': backend.platformKey } });
  const scopes = (await res.json()) as { id: string; name: string; parentId?: string }[];
  const byId = new Map(scopes.map((s) => [s.id, s]));
  const path = (s: { name: string; parentId?: string }): string => (s.parentId ? `${path(byId.get(s.parentId)!).replace(/\/$/, '')}/${s.name}` : '/');
  return Object.fromEntries(scopes.map((s) => [path(s), s.id]));
}

const trace = (page: Page) => page.getByRole('list', { name: 'Trace of the decision' });

/** The trace's branch of one leg (its top-level item), by the leg's name. */
const leg = (page: Page, name: string) => trace(page).locator(':scope > li').filter({ has: page.locator(`.trace-leg-name:text-is("${name}")`) });

async function playground(page: Page, backend: Backend, query: Record<string, string>): Promise<void> {
  await openView(page, backend, `playground?${new URLSearchParams(query).toString()}`);
}

test('alice may write document/roadmap in /eng by her role: the form asks, the trace shows the role path, the URL keeps the check', async ({ page, backend }) => {
  const scopes = await scopeIds(backend);
  await signIn(page, backend);
  await openView(page, backend, 'playground');
  await expect(page.getByRole('heading', { name: 'Decision playground', level: 1 })).toBeVisible();
  await page.getByLabel('Subject external id').fill('alice');
  await page.getByLabel('Scope id').fill(scopes['/eng']);
  await expect(page.getByText('The scope /eng.')).toBeVisible();
  await page.getByLabel('Action').fill('write');
  await page.getByLabel('Resource by').selectOption('external');
  await page.getByLabel('Resource type').fill('document');
  await page.getByLabel('External resource id').fill('roadmap');
  await page.getByRole('button', { name: 'Check', exact: true }).click();

  await expect(page.locator('.verdict')).toHaveText('✓ Allowed');
  // The playground's styles hold at desktop width too (an unclosed @media block once kept them to phones).
  await expect(page.locator('.field-row').first()).toHaveCSS('display', 'flex');
  await expect(page.locator('.facts').filter({ hasText: 'Reason' })).toContainText('role');
  const roles = leg(page, 'roles');
  await expect(roles.locator('summary')).toHaveText('roles allow 2 steps');
  await expect(roles.locator('.trace-step').first()).toContainText(`roles held: editor (membership membership_`);
  await expect(roles.locator('.trace-step').first()).toContainText(' at /eng)');
  await expect(roles.locator('.trace-step').nth(1)).toContainText('role editor has permission document:write:* covering the request');
  await expect(leg(page, 'decision')).toContainText('allowed (role)');
  // The check is in the address: exactly the names other views link with.
  expect(new URL(page.url()).search).toBe(`?externalId=alice&scopeId=${scopes['/eng']}&action=write&resourceType=document&externalResourceId=roadmap`);

  await expectAccessible(page, 'the playground with a trace');
  await screenshot(page, 'playground');
});

test('a URL with the check fills the form and runs it: bob is denied by the policy, whose condition shows the value it read', async ({ page, backend }) => {
  const scopes = await scopeIds(backend);
  await signIn(page, backend);
  await playground(page, backend, { externalId: 'bob', scopeId: scopes['/eng/platform'], action: 'read', resourceType: 'document', externalResourceId: 'roadmap' });

  await expect(page.getByLabel('Subject external id')).toHaveValue('bob');
  await expect(page.getByLabel('Action')).toHaveValue('read');
  await expect(page.getByLabel('External resource id')).toHaveValue('roadmap');
  await expect(page.locator('.verdict')).toHaveText('✗ Denied');
  const facts = page.locator('.decision > .facts');
  await expect(facts).toContainText('policy_deny');
  await expect(facts).toContainText(/Deciding policy\s*policy_\w+_no-contractors-on-confidential\s*deny, priority 100/);

  const policies = leg(page, 'policies');
  await expect(policies.locator('summary').first()).toHaveText('policies deny 3 steps');
  await expect(policies.locator('.trace-priority')).toHaveText('priority 100');
  await expect(policies).toContainText('collection confidential-documents at / matches the resource');
  const condition = policies.locator('.condition');
  await expect(condition.locator('.condition-head')).toHaveText('subjectCondition passed');
  await expect(condition.locator('.condition-rule')).toHaveText('subject.meta.employment == "contractor"');
  await expect(condition.locator('.condition-values')).toHaveText('subject.meta.employment"contractor"');
  await expect(policies).toContainText('highest matching priority 100: deny wins');
  await expect(leg(page, 'decision')).toContainText('denied (policy_deny)');
  await expectAccessible(page, 'the playground with a denied check');
});

test('the curl command, run with the platform key, and the authz check command give the answer the page shows', async ({ page, context, backend }) => {
  const scopes = await scopeIds(backend);
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await signIn(page, backend);
  for (const [who, scope, allowed] of [['alice', '/eng', true], ['bob', '/eng/platform', false]] as const) {
    await playground(page, backend, { externalId: who, scopeId: scopes[scope], action: 'read', resourceType: 'document', externalResourceId: 'roadmap', context: '{"note": "it\'s $HOME"}' });
    await expect(page.locator('.verdict')).toHaveText(allowed ? '✓ Allowed' : '✗ Denied');

    const curl = await page.locator('#curl-command').innerText();
    expect(curl).toContain('"x-api-key: $AUTHZ_API_KEY"');
    expect(curl).not.toContain(backend.platformKey);
    // The command's URL and body, as a shell would pass them (the body is single-quoted, a quote inside as '\'').
    const url = /^curl -sS -X POST (\S+)/.exec(curl)![1];
    const body = /-d '((?:[^']|'\\'')*)'$/.exec(curl.trim())![1].replaceAll(`'\\''`, `'`);
    expect(url).toBe(`${backend.url}/evaluate`);
    const res = await fetch(url, { method: 'POST', headers: { 'x-api-key': backend.platformKey, 'content-type': 'application/json' }, body });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { allowed: boolean }).allowed).toBe(allowed);

    // The CLI itself, through a shell: exit 0 when allowed, 1 when denied.
    const cli = await page.locator('#cli-command').innerText();
    const run = promisify(execFile)('sh', ['-c', `authz() { "${process.execPath}" --import tsx cli/main.ts "$@"; }\n${cli}`], {
      cwd: ROOT, env: { ...process.env, AUTHZ_API_KEY: backend.platformKey, AUTHZ_CONFIG: '/nonexistent/authz-config.json' },
    });
    if (allowed) expect((await run).stdout).toContain('allowed');
    else await expect(run).rejects.toMatchObject({ code: 1, stdout: expect.stringContaining('denied') });
  }

  await page.getByRole('button', { name: 'Copy the curl command' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Copied' })).toHaveText('Copied the curl command.');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(await page.locator('#curl-command').innerText());
});

test('atRevision answers as the tenant was: dave, a root viewer now, was no subject at revision 1, and /eng was no scope', async ({ page, backend }) => {
  await signIn(page, backend);
  await playground(page, backend, { externalId: 'dave', scopeId: backend.rootScopeId, action: 'read' });
  await expect(page.locator('.verdict')).toHaveText('✓ Allowed');
  await page.getByLabel('At revision').fill('1');
  await page.getByRole('button', { name: 'Check', exact: true }).click();
  await expect(page.locator('.verdict')).toHaveText('✗ Denied');
  const facts = page.locator('.decision > .facts');
  await expect(facts).toContainText('subject_not_found');
  await expect(facts).toContainText('Revision1 (asked as of revision 1)');
  expect(new URL(page.url()).searchParams.get('atRevision')).toBe('1');
  await expect(page.locator('#cli-command')).toContainText('--at-revision 1');

  // Before the model was applied /eng did not exist: the server's refusal is shown as it said it.
  const scopes = await scopeIds(backend);
  await playground(page, backend, { externalId: 'alice', scopeId: scopes['/eng'], action: 'write', resourceType: 'document', externalResourceId: 'roadmap', atRevision: '1' });
  await expect(page.getByRole('alert').locator('strong')).toHaveText('Not found');
  await expect(page.getByRole('alert')).toContainText(`scope ${scopes['/eng']} not found`);
  await expect(page.locator('.verdict')).toHaveCount(0);
});

test('bad input is named before any call: a context that is not JSON, a missing action', async ({ page, backend }) => {
  await signIn(page, backend);
  await openView(page, backend, 'playground');
  const evaluations: string[] = [];
  page.on('request', (r) => { if (r.url().includes('DecisionService/Evaluate')) evaluations.push(r.url()); });
  await page.getByLabel('Subject external id').fill('alice');
  await page.getByLabel('Context (JSON)').fill('{ip: 10.0.0.1}');
  await page.getByRole('button', { name: 'Check', exact: true }).click();
  const summary = page.getByRole('alert');
  await expect(summary).toContainText('Fix these 2 fields first:');
  await expect(summary).toContainText('Action: The action is required');
  await expect(summary).toContainText('Context (JSON): The context is not JSON');
  await expect(page.getByLabel('Context (JSON)')).toHaveAttribute('aria-invalid', 'true');
  await summary.getByRole('link', { name: /^Action/ }).click();
  await expect(page.getByLabel('Action')).toBeFocused();
  await expectAccessible(page, 'the playground with errors');
  expect(evaluations).toEqual([]);
  expect(new URL(page.url()).search).toBe('');
});

test('at 390 px the playground fits the screen and stays accessible', async ({ page, backend }) => {
  const scopes = await scopeIds(backend);
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, backend);
  await playground(page, backend, { externalId: 'erin', scopeId: scopes['/eng'], action: 'delete', resourceType: 'document', externalResourceId: 'spec' });
  await expect(page.locator('.verdict')).toHaveText('✓ Allowed');
  // erin owns the folder: the hierarchy leg walks from the document to it.
  await expect(leg(page, 'hierarchy')).toContainText('ancestor folder/designs via folder/designs: ownership grant');
  await expect(leg(page, 'hierarchy').locator('.trace-path')).toContainText('folder/designs');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await expectAccessible(page, 'the playground on a phone');
  await screenshot(page, 'playground-phone');
});

test('access: what alice holds in /eng, who may write the roadmap, what alice may write; each row opens its check', async ({ page, backend }) => {
  const scopes = await scopeIds(backend);
  await signIn(page, backend);
  await openView(page, backend, 'access');
  await expect(page.getByRole('heading', { name: 'Access', level: 1 })).toBeVisible();

  const eff = page.getByRole('region', { name: 'What can this subject do', exact: true });
  await eff.getByLabel('Subject external id').fill('alice');
  await eff.getByLabel('Scope id').fill(scopes['/eng']);
  await eff.getByRole('button', { name: 'Show permissions' }).click();
  const permissions = eff.getByRole('table');
  await expect(permissions.locator('tbody tr td:first-child')).toHaveText(['document:read:*', 'document:write:*', 'folder:read:*']);
  await expect(permissions.locator('tbody tr').first().locator('td').nth(2)).toHaveText(/^editor role_/);

  const who = page.getByRole('region', { name: 'Who can', exact: true });
  await who.getByLabel('Scope id').fill(scopes['/eng']);
  await who.getByLabel('Action').fill('write');
  await who.getByLabel('Resource type').fill('document');
  await who.getByLabel('External resource id').fill('roadmap');
  await who.getByRole('button', { name: 'Find subjects' }).click();
  const subjects = who.getByRole('table', { name: 'Subjects who may write' });
  const alice = subjects.locator('tbody tr').filter({ hasText: 'alice' });
  await expect(alice).toHaveCount(1);
  await expect(alice.locator('td').nth(2)).toContainText(/^role role editor role_\S+ through membership membership_\S+ at \/eng/);
  await alice.locator('.grant-trace > summary').click();
  await expect(alice.getByRole('list', { name: "Trace of alice's decision" })).toContainText('role editor has permission document:write:* covering the request');

  const what = page.getByRole('region', { name: 'What can', exact: true });
  await what.getByLabel('Subject external id').fill('alice');
  await what.getByLabel('Scope id').fill(scopes['/eng']);
  await what.getByLabel('Action').fill('write');
  await what.getByLabel('Resource type').fill('document');
  await what.getByRole('button', { name: 'Find resources' }).click();
  const resources = what.getByRole('table', { name: 'Resources alice may write' });
  await expect(resources.locator('tbody tr td:first-child')).toContainText(['document/roadmap', 'document/spec']);

  await expectAccessible(page, 'the access view with results');
  await screenshot(page, 'access');

  // The row's link carries the check to the playground, which runs it.
  await alice.getByRole('link', { name: 'Check alice' }).click();
  await expect(page.getByRole('heading', { name: 'Decision playground', level: 1 })).toBeVisible();
  await expect(page.getByLabel('Subject by')).toHaveValue('subjectId');
  await expect(page.locator('.verdict')).toHaveText('✓ Allowed');
  await expect(page.locator('.decision > .facts')).toContainText('role');
});
