/**
 * The History and Model as code views in a real browser. Other files write to the same backend,
 * so each test reads the tenant's revision before it writes and compares after, and writes only
 * entities of its own.
 */
import { readFileSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { expectAccessible } from './axe.js';
import { expect, openView, screenshot, signIn, test, type Backend } from './backends.js';

/** A REST call with the platform key, for the writes a test makes outside the console. */
async function rest<T>(backend: Backend, method: string, path: string, body?: unknown, reason?: string): Promise<T> {
  const headers: Record<string, string> = { 'x-api-key': backend.platformKey, 'content-type': 'application/json' };
  if (reason) headers['x-change-reason'] = reason;
  const res = await fetch(`${backend.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function tenantRevision(backend: Backend): Promise<number> {
  return Number((await rest<{ revision: number | string }>(backend, 'GET', `/tenants/${backend.tenantId}`)).revision);
}

/** The exported model as the page shows it. */
async function exportedText(page: Page): Promise<string> {
  const pre = page.getByLabel('The exported model (YAML)');
  await expect(pre).toContainText('kind: TenantModel');
  return (await pre.textContent()) ?? '';
}

/** A revision's entry in the timeline. */
const revisionEntry = (page: Page, revision: number) => page.getByRole('article', { name: `Revision ${revision}`, exact: true });

test('history shows revision 2, the model apply, with its entity changes and their fields', async ({ page, backend }) => {
  await signIn(page, backend);
  await openView(page, backend, 'history');
  await expect(page.getByRole('heading', { name: 'History', level: 1 })).toBeVisible();
  await expect(page.getByText('Oldest revision in the log: 1.')).toBeVisible();
  const rev2 = revisionEntry(page, 2);
  await expect(rev2).toBeVisible();
  // examples/documents/model.yaml makes 53 entities in one apply: one revision, one row each.
  await expect(rev2.getByRole('list', { name: 'Changes of revision 2' }).getByRole('listitem')).toHaveCount(53);
  await expect(rev2.getByText('no reason given')).toBeVisible();
  await expect(rev2.getByRole('link', { name: 'Evaluate a check as of revision 2' })).toHaveAttribute('href', `/console/t/${backend.tenantId}/playground?atRevision=2`);
  // The scope eng: created, so every field is added and there is no before.
  const eng = rev2.getByRole('listitem').filter({ has: page.locator('summary', { hasText: /^create scope eng scope_/ }) });
  // Opened from the keyboard: a summary is a real control.
  await eng.locator('summary').focus();
  await page.keyboard.press('Enter');
  const created = eng.getByRole('table', { name: 'Created with these fields (there is no before)' });
  await expect(created.getByRole('row', { name: /^name added none eng$/ })).toBeVisible();
  await expect(created.getByRole('row', { name: /^parentId added none scope_/ })).toBeVisible();
  await expectAccessible(page, 'the history view');
  await screenshot(page, 'history');
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(rev2).toBeVisible();
  await expectAccessible(page, 'the history view on a phone');
  await screenshot(page, 'history-phone');
});

test('an update shows each field before and after; the filters narrow the log and live in the URL', async ({ page, backend }) => {
  const subject = await rest<{ id: string }>(backend, 'POST', '/subjects', { tenantId: backend.tenantId, type: 'user', externalId: `e2e-history-${test.info().project.name}`, metadata: { team: 'eng', level: 1 } }, 'console e2e: a subject to edit');
  await rest(backend, 'PATCH', `/subjects/${subject.id}`, { metadata: { team: 'ops', region: 'eu' } }, 'console e2e: moved to ops');
  const updated = await tenantRevision(backend);
  await signIn(page, backend);
  await openView(page, backend, `history?entityId=${subject.id}`);
  await expect(page.getByLabel('Entity id')).toHaveValue(subject.id);
  await expect(page.getByRole('list', { name: 'Revisions' }).getByRole('article')).toHaveCount(2);
  await expect(revisionEntry(page, updated - 1).getByText('console e2e: a subject to edit')).toBeVisible();
  const update = revisionEntry(page, updated);
  await expect(update.getByText('console e2e: moved to ops')).toBeVisible();
  const table = update.getByRole('table', { name: 'Fields before and after the change' });
  await expect(table.getByRole('row')).toHaveCount(4);
  await expect(table.getByRole('row', { name: 'metadata.team changed eng ops' })).toBeVisible();
  await expect(table.getByRole('row', { name: 'metadata.region added none eu' })).toBeVisible();
  await expect(table.getByRole('row', { name: 'metadata.level removed 1 none' })).toBeVisible();
  await expect(update.getByText('6 unchanged fields')).toBeVisible();

  // Filter by kind through the form: the policy of revision 2 stays, the root scope of revision 1 goes.
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await expect(page).toHaveURL(new RegExp(`/console/t/${backend.tenantId}/history$`));
  await expect(revisionEntry(page, 1)).toBeVisible();
  await page.getByLabel('Kind').selectOption('policy');
  await page.getByRole('button', { name: 'Show changes' }).click();
  await expect(page).toHaveURL(/\/history\?kind=policy$/);
  const rev2 = revisionEntry(page, 2);
  await expect(rev2.getByRole('list', { name: 'Changes of revision 2' }).getByRole('listitem')).toHaveCount(1);
  await expect(rev2.locator('summary')).toHaveText(/^create policy policy_[0-9a-f]{10}_no-contractors-on-confidential$/);
  await expect(revisionEntry(page, 1)).toHaveCount(0);
  await page.reload();
  await expect(page.getByLabel('Kind')).toHaveValue('policy');
  await expect(revisionEntry(page, 1)).toHaveCount(0);
  await expect(revisionEntry(page, 2)).toBeVisible();

  // A filter the browser can check is refused before any request.
  await page.getByLabel('From revision').fill('two');
  await page.getByRole('button', { name: 'Show changes' }).click();
  await expect(page.getByRole('alert')).toHaveText('From revision must be a whole number, got "two".');
  await expectAccessible(page, 'the filtered history view');
});

test('the export downloads as a file, and pasted back unchanged plans no changes', async ({ page, backend }) => {
  await signIn(page, backend);
  await openView(page, backend, 'model');
  await expect(page.getByRole('heading', { name: 'Model as code', level: 1 })).toBeVisible();
  const text = await exportedText(page);
  expect(text).toContain('  - path: /eng/platform\n    type: team\n');
  expect(text).toContain('  - externalId: alice\n');
  await expect(page.getByRole('button', { name: 'Download', exact: true })).toHaveAccessibleDescription(`${backend.tenantId}.model.yaml`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download', exact: true }).click()]);
  expect(download.suggestedFilename()).toBe(`${backend.tenantId}.model.yaml`);
  expect(readFileSync(await download.path(), 'utf8')).toBe(text);

  await page.getByLabel('Model text').fill(text);
  await page.getByRole('button', { name: 'Plan', exact: true }).click();
  await expect(page.getByRole('heading', { name: /^Plan at revision \d+$/ })).toBeFocused();
  await expect(page.getByText(/^No changes\./)).toBeVisible();
  await expect(page.getByText(/^Nothing to apply: the tenant stays at revision \d+\.$/)).toBeVisible();
  await expect(page.locator('.plan-change')).toHaveCount(0);
  await expectAccessible(page, 'the model view');
  await screenshot(page, 'model');

  // A JSON file chosen from disk: its sections alone are compared, and they match the tenant.
  const scopes = { apiVersion: 'authz/v1', kind: 'TenantModel', scopes: ['/eng', '/eng/platform', '/legal', '/sales'].map((path) => ({ path, type: 'team' })) };
  await page.getByLabel('Model file (YAML or JSON)').setInputFiles({ name: 'scopes.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(scopes, null, 2)) });
  await expect(page.getByLabel('Model text')).toHaveValue(/"path": "\/eng\/platform"/);
  await expect(page.getByText('Messages call it scopes.json.')).toBeVisible();
  await page.getByRole('button', { name: 'Plan', exact: true }).click();
  await expect(page.getByText(/^No changes[.;]/)).toBeVisible();
  await expect(page.locator('.plan-change')).toHaveCount(0);

  // A syntax error is found in the browser, with its line and column; nothing is planned.
  await page.getByLabel('Model text').fill('apiVersion: authz/v1\nkind: TenantModel\nscopes:\n  - path: /eng\n   type: team\n');
  await page.getByRole('button', { name: 'Plan', exact: true }).click();
  await expect(page.getByRole('alert')).toContainText('The model cannot be read');
  await expect(page.getByRole('alert')).toContainText('scopes.json:5:');
  await expect(page.getByRole('heading', { name: /^Plan at revision/ })).toHaveCount(0);
  await expect(page.getByLabel('Model text')).toHaveAttribute('aria-invalid', 'true');
  // A file the server refuses shows the server's message, with the file's line.
  await page.getByLabel('Model text').fill('apiVersion: authz/v1\nkind: TenantModel\nroles:\n  - key: x\n    permissions: [nope]\n');
  await page.getByRole('button', { name: 'Plan', exact: true }).click();
  await expect(page.getByRole('alert')).toContainText(`scopes.json:5:19: roles[0].permissions[0]: no permission "nope" is defined at / or above it`);
  await page.setViewportSize({ width: 390, height: 844 });
  await expectAccessible(page, 'the model view on a phone');
  await screenshot(page, 'model-phone');
});

test('a plan with one new scope applies as one revision, whose history entry shows the create', async ({ page, backend }) => {
  await signIn(page, backend);
  await openView(page, backend, 'model');
  const text = await exportedText(page);
  const before = await tenantRevision(backend);
  await page.getByRole('button', { name: 'Edit a copy below' }).click();
  await expect(page.getByLabel('Model text')).toHaveValue(text);
  await page.getByLabel('Model text').fill(text.replace('scopes:\n', 'scopes:\n  - path: /support\n    type: team\n'));
  await page.getByRole('button', { name: 'Plan', exact: true }).click();
  await expect(page.getByRole('heading', { name: `Plan at revision ${before}` })).toBeVisible();
  await expect(page.getByText('1 to create, 0 to update, 0 to replace, 0 to delete.')).toBeVisible();
  await expect(page.locator('.plan-change')).toHaveCount(1);
  await expect(page.getByRole('list', { name: 'Changes of kind scope' }).getByRole('listitem')).toHaveText('+create scope /support at scopes[0]');

  await page.getByRole('button', { name: 'Apply this plan…' }).click();
  await expect(page.getByRole('heading', { name: 'Apply 1 change to tenant acme?' })).toBeFocused();
  await expectAccessible(page, 'the model view, confirming an apply');
  await page.getByRole('button', { name: 'Apply now' }).click();
  const after = before + 1;
  await expect(page.getByRole('heading', { name: `Applied: the tenant is at revision ${after}` })).toBeVisible();
  expect(await tenantRevision(backend)).toBe(after);
  await expect(page.locator('.tenant-name .revision')).toHaveText(`revision ${after}`);
  await expect(page.getByTestId('export-revision')).toHaveText(String(after));
  await screenshot(page, 'model-applied');

  await page.getByRole('link', { name: `See revision ${after} in the history` }).click();
  await expect(page).toHaveURL(new RegExp(`/history\\?fromRevision=${after}&toRevision=${after}$`));
  const entry = revisionEntry(page, after);
  await expect(entry).toBeVisible();
  await expect(page.getByRole('list', { name: 'Revisions' }).getByRole('article')).toHaveCount(1);
  const changes = entry.getByRole('list', { name: `Changes of revision ${after}` }).getByRole('listitem');
  await expect(changes).toHaveCount(1);
  await expect(changes.locator('summary')).toHaveText(/^create scope support scope_/);
  await expect(changes.getByRole('table', { name: 'Created with these fields (there is no before)' }).getByRole('row', { name: 'name added none support' })).toBeVisible();
  await expect(entry.getByRole('link', { name: `Evaluate a check as of revision ${after}` })).toHaveAttribute('href', `/console/t/${backend.tenantId}/playground?atRevision=${after}`);
});

test('a plan made stale by another write is refused, and planned again at the new revision', async ({ page, backend }) => {
  const project = test.info().project.name;
  await signIn(page, backend);
  await openView(page, backend, 'model');
  const text = await exportedText(page);
  await page.getByLabel('Model text').fill(text.replace('subjects:\n', `subjects:\n  - externalId: e2e-stale-plan-${project}\n`));
  await page.getByRole('button', { name: 'Plan', exact: true }).click();
  const planned = await tenantRevision(backend);
  await expect(page.getByRole('heading', { name: `Plan at revision ${planned}` })).toBeVisible();
  await expect(page.getByRole('list', { name: 'Changes of kind subject' }).getByRole('listitem')).toHaveText(`+create subject e2e-stale-plan-${project} at subjects[0]`);
  // Another writer moves the tenant on between the plan and the apply.
  await rest(backend, 'POST', '/subjects', { tenantId: backend.tenantId, type: 'user', externalId: `e2e-stale-writer-${project}` });
  const moved = await tenantRevision(backend);
  expect(moved).toBeGreaterThan(planned);

  await page.getByRole('button', { name: 'Apply this plan…' }).click();
  await page.getByRole('button', { name: 'Apply now' }).click();
  const alert = page.getByRole('alert');
  await expect(alert).toContainText(`The tenant changed after this plan (made at revision ${planned}): nothing was applied`);
  await expect(alert).toContainText(`the tenant is at revision ${moved}, not at the expected revision ${planned}: plan again`);
  expect(await tenantRevision(backend)).toBe(moved);
  await expectAccessible(page, 'the model view with a stale plan');
  await screenshot(page, 'model-stale');
  await alert.getByRole('button', { name: 'Plan again' }).click();
  await expect(page.getByRole('heading', { name: `Plan at revision ${moved}` })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Apply this plan…' })).toBeVisible();
});
