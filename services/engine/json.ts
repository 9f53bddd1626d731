/** Helpers over JSON values shared by the engine's modules. */

/** Whether `v` is a plain object (`{}` or `Object.create(null)`): not null, an array, a class instance or a boxed value. */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
