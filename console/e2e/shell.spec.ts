/** Sign-in, the shell, the tenants list and the scope tree, in a real browser. */
import { expectAccessible } from './axe.js';
import { expect, openView, screenshot, signIn, test } from './backends.js';

test('GET / leads to the console, which asks for a key', async ({ page, backend }) => {
  await page.goto('/');
  await expect(page).toHaveURL(`${backend.url}/console/`);
  await expect(page.getByRole('heading', { name: 'authz console' })).toBeVisible();
  await expectAccessible(page, 'the sign-in page');
  await screenshot(page, 'sign-in');
});

test('a wrong key is refused with the server\'s reason, and no cookie is set', async ({ page, context }) => {
  await page.goto('/console/');
  await page.getByLabel('API key').fill('azk_not_a_real_key_0000000000000000');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('unknown, revoked or expired API key');
  expect(await context.cookies()).toEqual([]);
});

test('signing in sets an HttpOnly, SameSite=Strict cookie, and keeps the key out of storage and the URL', async ({ page, context, backend }) => {
  await signIn(page, backend);
  const cookies = await context.cookies();
  expect(cookies).toHaveLength(1);
  expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
  expect(cookies[0].value).not.toContain(backend.platformKey);
  const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, url: location.href, cookie: document.cookie }));
  expect(stored).not.toContain(backend.platformKey);
  expect(stored).not.toContain(cookies[0].value);
});

test('the tenants list links to the tenant, whose scope tree opens level by level', async ({ page, backend }) => {
  await signIn(page, backend);
  await expect(page.getByRole('heading', { name: 'Tenants' })).toBeVisible();
  await expectAccessible(page, 'the tenants list');
  await page.getByRole('link', { name: 'acme' }).first().click();
  await expect(page.getByRole('heading', { name: 'Scopes', level: 1 })).toBeVisible();
  await expect(page).toHaveURL(new RegExp(`/console/t/${backend.tenantId}/scopes$`));
  const tree = page.getByRole('list', { name: 'Scopes' });
  await expect(tree.getByRole('button', { name: /^eng/ })).toBeVisible();
  await tree.getByRole('button', { name: /^eng/ }).click();
  await expect(page.getByRole('heading', { name: 'Scope eng' })).toBeVisible();
  await expectAccessible(page, 'the scopes view');
  await screenshot(page, 'scopes');
  void openView;
});

test('a user key sees its own tenant only, and sign-out ends the session on the server', async ({ page, context, backend }) => {
  await signIn(page, backend, backend.userKey);
  await expect(page).toHaveURL(new RegExp(`/console/t/${backend.tenantId}/scopes$`));
  const cookie = (await context.cookies())[0];
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'You have signed out.' })).toBeVisible();
  // The old cookie, sent again by hand, is refused: the session is gone from the server.
  const res = await fetch(`${backend.url}/console/session`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
  expect(res.status).toBe(401);
});

test('works from the keyboard alone: sign in, open a tenant and a view, each view\'s heading takes the focus', async ({ page, backend }) => {
  await page.goto('/console/');
  await expect(page.getByLabel('API key')).toBeFocused();
  await page.keyboard.type(backend.platformKey);
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Tenants', level: 1 })).toBeFocused();
  /** Presses Tab (or Shift+Tab) until `name` has the focus; fails after 60 presses. */
  const tabTo = async (role: 'link' | 'button', name: string, back = false) => {
    const target = page.getByRole(role, { name, exact: true }).first();
    for (let i = 0; i < 60; i++) {
      if (await target.evaluate((el) => el === document.activeElement)) return;
      await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    }
    throw new Error(`${role} ${name} never took the focus`);
  };
  await tabTo('link', 'acme');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Scopes', level: 1 })).toBeFocused();
  await tabTo('link', 'Roles');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'Roles', level: 1 })).toBeFocused();
  await expect(page.getByRole('link', { name: 'Roles' })).toHaveAttribute('aria-current', 'page');
  await tabTo('button', 'Sign out', true);
  await page.keyboard.press('Enter');
  await expect(page.getByRole('status').filter({ hasText: 'You have signed out.' })).toBeVisible();
});
