/** Reading and replacing a value at a path in plain JSON objects (config sections). */

export type JsonObject = Record<string, unknown>;

export function valueAt(obj: unknown, path: readonly string[]): unknown {
  let node = obj;
  for (const key of path) {
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, key)) return undefined;
    node = (node as JsonObject)[key];
  }
  return node;
}

/** A copy of obj with the value at path replaced: the objects on the path are copied, nothing else is. */
export function withValueAt(obj: JsonObject, path: readonly string[], value: unknown): JsonObject {
  const [key, ...rest] = path;
  if (key === undefined) return obj;
  const child = obj[key];
  const next = child !== null && typeof child === 'object' && !Array.isArray(child) ? (child as JsonObject) : {};
  return { ...obj, [key]: rest.length ? withValueAt(next, rest, value) : value };
}
