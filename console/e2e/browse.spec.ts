/**
 * The browse views (roles, resource types, resources, subjects, policies) against the seeded
 * tenant (examples/documents/model.yaml): its values on screen, axe on each, a screenshot each,
 * and the views at a phone's width.
 */
import type { Locator, Page } from '@playwright/test';
import { expectAccessible } from './axe.js';
import { expect, openView, screenshot, signIn, test, type Backend } from './backends.js';

async function open(page: Page, backend: Backend, path: string, title: string): Promise<void> {
  await signIn(page, backend);
  await openView(page, backend, path);
  await expect(page.getByRole('heading', { name: title, level: 1 })).toBeVisible();
}

/** The matrix cell of a role (row header starting with its name) and a permission key (column header). */
async function matrixCell(matrix: Locator, role: string, permissionKey: string): Promise<Locator> {
  const headers = await matrix.getByRole('columnheader').allTextContents();
  const column = headers.findIndex((h) => h.startsWith(`${permissionKey} `));
  expect(column, `a column for ${permissionKey} in ${JSON.stringify(headers)}`).toBeGreaterThan(0);
  const row = matrix.getByRole('row').filter({ has: matrix.page().getByRole('rowheader', { name: new RegExp(`^${role} `) }) });
  return row.getByRole('cell').nth(column - 1);
}

/** Opens the scope picker and chooses a scope by name. */
async function chooseScope(page: Page, name: string): Promise<void> {
  await page.locator('.scope-picker > summary').click();
  await page.getByRole('list', { name: 'Scopes to choose from' }).getByRole('button', { name, exact: true }).click();
}

test('roles: the matrix marks what each seeded role is granted', async ({ page, backend }) => {
  await open(page, backend, 'roles', 'Roles');
  const matrix = page.getByRole('table', { name: 'Permissions granted to each role' });
  await expect(matrix.getByRole('rowheader')).toHaveText(['Editor editor', 'Owner owner', 'Viewer viewer'], { useInnerText: true });
  await expect(await matrixCell(matrix, 'Editor', 'document:write:*')).toHaveText('✓granted');
  await expect(await matrixCell(matrix, 'Editor', 'document:delete:*')).toHaveText('·not granted');
  await expect(await matrixCell(matrix, 'Owner', 'document:delete:*')).toHaveText('✓granted');
  await expect(await matrixCell(matrix, 'Viewer', 'document:write:*')).toHaveText('·not granted');
  await expect(await matrixCell(matrix, 'Viewer', 'folder:read:*')).toHaveText('✓granted');
  // The full list of permissions, below the matrix.
  const all = page.getByRole('region', { name: 'All permissions' }).getByRole('table');
  await expect(all.getByRole('row', { name: /document:delete:\* Delete documents/ })).toBeVisible();
  await expectAccessible(page, 'the roles view');
  await screenshot(page, 'roles');
});

test('resource types: folder contains documents and itself', async ({ page, backend }) => {
  await open(page, backend, 'resource-types', 'Resource types');
  await expect(page.getByRole('table').getByRole('row', { name: /^Folder folder / })).toBeVisible();
  const tree = page.getByRole('list', { name: 'Resource type hierarchy' });
  // Folder is the only root; under it, Document and Folder again, marked.
  const roots = tree.locator(':scope > li');
  await expect(roots).toHaveCount(1);
  await expect(roots.locator(':scope > .type-label')).toHaveText('Folder');
  const children = roots.locator(':scope > ul > li');
  await expect(children).toHaveText(['Document document', 'Folder folder (contains itself)'], { useInnerText: true });
  await expectAccessible(page, 'the resource types view');
  await screenshot(page, 'resource-types');
});

test('resources: a scope\'s resources, and the roadmap\'s parent, link, grant and tag by a link of its own', async ({ page, backend }) => {
  await open(page, backend, 'resources', 'Resources');
  await expect(page.getByText('No resources owned by this scope.')).toBeVisible();
  await chooseScope(page, 'eng');
  await expect(page.getByRole('heading', { name: 'Resources of eng' })).toBeVisible();
  const list = page.getByRole('region', { name: 'Resources of eng' }).getByRole('table');
  // The API lists by id, not by name: the three are there, in whatever order.
  await expect(list.getByRole('link')).toHaveCount(3);
  for (const name of ['Designs', 'Roadmap', 'Platform spec']) await expect(list.getByRole('link', { name, exact: true })).toBeVisible();
  await list.getByRole('link', { name: 'Roadmap' }).click();
  await expect(page).toHaveURL(/[?&]resource=/);
  const detail = page.getByRole('region', { name: 'Selected resource' });
  await expectRoadmap(detail);
  await expectAccessible(page, 'the resources view');
  await screenshot(page, 'resources');

  // The URL alone (no scope in it) opens the same resource, and lists the scope that owns it.
  const resourceId = new URL(page.url()).searchParams.get('resource')!;
  await page.goto(`/console/t/${backend.tenantId}/resources?resource=${encodeURIComponent(resourceId)}`);
  await expectRoadmap(page.getByRole('region', { name: 'Selected resource' }));
  await expect(page.getByRole('heading', { name: 'Resources of eng' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Roadmap' }).first()).toHaveAttribute('aria-current', 'true');

  // The parent's page: its children and its owner (erin).
  await page.getByRole('region', { name: 'Selected resource' }).getByRole('link', { name: 'Designs' }).first().click();
  const designs = page.getByRole('region', { name: 'Selected resource' });
  await expect(designs.getByRole('definition').first()).toHaveText('Designs');
  const children = designs.getByRole('heading', { name: 'Children' }).locator('xpath=following-sibling::*[1]').getByRole('link');
  await expect(children).toHaveCount(2);
  for (const name of ['Roadmap', 'Platform spec']) await expect(children.filter({ hasText: name })).toHaveCount(1);
  await expect(designs.getByRole('row', { name: 'erin Owner' })).toBeVisible();
  await expect(designs.getByText('None: a top-level resource.')).toBeVisible();
});

async function expectRoadmap(detail: Locator): Promise<void> {
  const facts = detail.locator('dl.facts');
  await expect(facts).toContainText('Roadmap');
  await expect(facts).toContainText('Document');
  await expect(facts).toContainText('"year": 2026');
  await expect(detail.getByRole('heading', { name: 'Parent' }).locator('xpath=following-sibling::*[1]')).toHaveText(/^Designs/);
  await expect(detail.getByRole('row', { name: /^1 Designs inherit$/ })).toBeVisible();
  await expect(detail.getByRole('row', { name: 'legal share' })).toBeVisible();
  await expect(detail.getByRole('row', { name: 'alice Owner' })).toBeVisible();
  await expect(detail.getByRole('list', { name: 'Tags' })).toHaveText('classification: confidential');
}

test('subjects: alice\'s membership, role and grant; the selection is in the URL', async ({ page, backend }) => {
  await open(page, backend, 'subjects', 'Subjects');
  const list = page.getByRole('region', { name: 'Subjects of the tenant' });
  for (const name of ['alice', 'bob', 'carol', 'dave', 'erin']) await expect(list.getByRole('link', { name, exact: true })).toBeVisible();
  await list.getByRole('link', { name: 'alice', exact: true }).click();
  await expect(page).toHaveURL(/[?&]subject=/);
  const detail = page.getByRole('region', { name: 'Selected subject' });
  await expect(detail.locator('dl.facts')).toContainText('"employment": "staff"');
  const memberships = detail.getByRole('heading', { name: 'Memberships and roles' }).locator('xpath=following-sibling::*[1]');
  await expect(memberships.getByRole('row')).toHaveText([/Scope\s*Roles/, /^eng\s*Editor$/]);
  await expect(detail.getByRole('row', { name: 'Roadmap Owner' })).toBeVisible();
  await expectAccessible(page, 'the subjects view');
  await screenshot(page, 'subjects');

  // bob by a link of his own: a viewer in platform.
  const bobHref = await list.getByRole('link', { name: 'bob', exact: true }).getAttribute('href');
  await page.goto(bobHref!);
  const bob = page.getByRole('region', { name: 'Selected subject' });
  await expect(bob.locator('dl.facts')).toContainText('"employment": "contractor"');
  await expect(bob.getByRole('row', { name: /^platform\s*Viewer$/ })).toBeVisible();
  await expect(bob.getByText('No ownership grants.')).toBeVisible();
});

test('policies: the seeded deny policy with its condition written out, and its collection\'s match', async ({ page, backend }) => {
  await open(page, backend, 'policies', 'Policies');
  const policy = page.getByRole('article', { name: 'deny * on collection confidential-documents' });
  await expect(policy).toBeVisible();
  await expect(policy.locator('code.logic')).toHaveText('subject.meta.employment == "contractor"');
  await expect(policy.getByRole('definition').nth(1)).toHaveText('100');
  await expect(policy).toContainText('none (always holds)');
  await expect(policy).toContainText('always');
  const collection = page.getByRole('article', { name: 'confidential-documents', exact: true });
  await expect(collection.getByRole('definition').first()).toHaveText('Document');
  await expect(collection.locator('.match code.logic')).toHaveText(['tag classification is "confidential"']);
  // The JSON behind the expression is one click away.
  await policy.getByText('JSON', { exact: true }).click();
  await expect(policy.locator('pre')).toContainText('"subject.meta.employment"');
  await expectAccessible(page, 'the policies view');
  await screenshot(page, 'policies');
});

test('at a phone\'s width each view shows its content and the page does not scroll sideways', async ({ page, backend }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page, backend);
  const views: [path: string, title: string, content: (p: Page) => Locator][] = [
    ['roles', 'Roles', (p) => p.getByRole('rowheader', { name: /^Editor / })],
    ['resource-types', 'Resource types', (p) => p.getByText('(contains itself)')],
    ['subjects', 'Subjects', (p) => p.getByRole('link', { name: 'alice', exact: true })],
    ['policies', 'Policies', (p) => p.getByText('subject.meta.employment == "contractor"')],
  ];
  for (const [path, title, content] of views) {
    await openView(page, backend, path);
    await expect(page.getByRole('heading', { name: title, level: 1 })).toBeVisible();
    await expect(content(page)).toBeVisible();
    expect(await page.evaluate(() => document.documentElement.scrollWidth), `${path} at 390 px`).toBeLessThanOrEqual(390);
  }
  // A selected resource, its detail under the list.
  await openView(page, backend, 'resources');
  await chooseScope(page, 'eng');
  // The scope's list settled first: a click while the scope change is still on its way is
  // undone by it (the new scope's URL carries no resource).
  const list = page.getByRole('region', { name: 'Resources of eng' }).getByRole('table');
  await expect(list.getByRole('link')).toHaveCount(3);
  await list.getByRole('link', { name: 'Roadmap' }).click();
  await expect(page).toHaveURL(/[?&]resource=/);
  await expect(page.getByRole('row', { name: 'alice Owner' })).toBeVisible();
  await page.getByRole('row', { name: 'alice Owner' }).scrollIntoViewIfNeeded();
  expect(await page.evaluate(() => document.documentElement.scrollWidth), 'resources at 390 px').toBeLessThanOrEqual(390);
  await expectAccessible(page, 'the resources view at 390 px');
  await screenshot(page, 'resources-phone');
});

test('a key that may not read roles sees the server\'s refusal, not an empty view', async ({ page, backend }) => {
  await signIn(page, backend, backend.userKey);
  await openView(page, backend, 'roles');
  await expect(page.getByRole('heading', { name: 'Roles', level: 1 })).toBeVisible();
  const refusal = page.getByRole('region', { name: /^Roles defined at/ }).getByRole('alert');
  await expect(refusal).toContainText('Not allowed with this key');
  await expect(refusal).toContainText('RoleService.ListRoles');
});
