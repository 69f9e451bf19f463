/**
 * JSON from outside with a bounded nesting depth. V8's JSON.parse copes with any depth, but the
 * value is later walked recursively (JSON.stringify when stored, schema validation), which throws
 * RangeError past a few thousand levels: a 200,000-level `jwks` answered 500. The depth is counted
 * in one pass over the text, before parsing, so a deep document costs no more than its size.
 *
 * Request bodies also refuse a member name given twice in one object (RFC 8259 4: names SHOULD be
 * unique, and JSON.parse keeps the last): as with a repeated query parameter (docs/decisions.md), a
 * value checked by one reader could pass unseen by another. Found in the same pass (memberNames).
 */
export const MAX_JSON_DEPTH = 64;

export class JsonTooDeep extends Error {
  /** The top-level member whose value nests too deep (undefined for a top-level array). */
  constructor(
    readonly limit: number,
    readonly member?: string,
  ) {
    super(`JSON nested deeper than ${limit} levels`);
    this.name = 'JsonTooDeep';
  }
}

export class JsonDuplicateMember extends Error {
  /** Where the repeated name is: the member path (`a.b`, `list.0.name`), names as they read once unescaped. */
  constructor(readonly path: string) {
    super(`JSON member ${path} is given more than once`);
    this.name = 'JsonDuplicateMember';
  }
}

interface DepthScan {
  /** The deepest nesting seen (stops counting once past `stopAbove`). */
  depth: number;
  /** The top-level member being read when the scan stopped, when the document is an object. */
  member: string | undefined;
}

/** One open object or array of the document, as memberNames tracks it. */
interface Frame {
  /** The names read so far (objects); undefined for an array. */
  names: Set<string> | undefined;
  /** Objects: the next string is a member name (after `{` or `,`). */
  expectName: boolean;
  /** The member being read (objects) or the element index (arrays), for the path. */
  at: string | number;
}

const MAX_PATH = 256;

/**
 * Member names per object, fed by the scan at each bracket, comma and string (no work for the
 * characters in between). Linear: each name is read once, escapes decoded only when it has one,
 * and each object's names go in one Set. Text that is not JSON leaves it in any state: JSON.parse
 * refuses that text anyway, and its refusal is the one given.
 */
class MemberNames {
  private readonly frames: Frame[] = [];
  duplicate: string | undefined;

  open(object: boolean): void {
    this.frames.push({ names: object ? new Set() : undefined, expectName: object, at: object ? '' : 0 });
  }

  close(): void {
    this.frames.pop();
  }

  comma(): void {
    const top = this.frames[this.frames.length - 1];
    if (!top) return;
    if (top.names) top.expectName = true;
    else top.at = (top.at as number) + 1;
  }

  /** A string from `start` to `end` (its quotes included); `escaped` when it holds a backslash. */
  string(text: string, start: number, end: number, escaped: boolean): void {
    const top = this.frames[this.frames.length - 1];
    if (!top?.names || !top.expectName) return;
    top.expectName = false;
    const name = escaped ? memberName(text.slice(start, end + 1)) : text.slice(start + 1, end);
    if (name === undefined) return;
    top.at = name;
    if (this.duplicate !== undefined) return;
    if (top.names.has(name)) this.duplicate = this.path();
    else top.names.add(name);
  }

  private path(): string {
    const path = this.frames.map((f) => (f.at === '' ? '""' : String(f.at))).join('.');
    return path.length > MAX_PATH ? `${path.slice(0, MAX_PATH)}…` : path;
  }
}

/**
 * The one pass over JSON text: nesting depth, brackets inside strings ignored, stopping once past
 * `stopAbove`. It notes the top-level member names of an object document as it goes, so a
 * too-deep body can be refused naming its field without a second scan.
 */
function scanDepth(text: string, stopAbove: number, names?: MemberNames): DepthScan {
  let depth = 0;
  let max = 0;
  let inString = false;
  let stringStart = -1;
  let escaped = false;
  let member: string | undefined;
  let topLevelArray = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        i++; // backslash: skip the escaped character
        escaped = true;
      } else if (c === 0x22) {
        inString = false;
        names?.string(text, stringStart, i, escaped);
        // A string directly inside the top-level object and followed by ':' is a member name.
        if (depth === 1 && !topLevelArray) {
          let j = i + 1;
          while (j < text.length && /\s/.test(text[j]!)) j++;
          if (text[j] === ':') member = memberName(text.slice(stringStart, i + 1));
        }
      }
    } else if (c === 0x22) {
      inString = true;
      stringStart = i;
      escaped = false;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === 0) topLevelArray = c === 0x5b;
      if (++depth > max) {
        max = depth;
        if (max > stopAbove) break;
      }
      names?.open(c === 0x7b);
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      names?.close();
    } else if (c === 0x2c) {
      names?.comma();
    }
  }
  return { depth: max, member: topLevelArray ? undefined : member };
}

function memberName(literal: string): string | undefined {
  try {
    return JSON.parse(literal) as string;
  } catch {
    return undefined;
  }
}

/** The deepest nesting of objects and arrays in `text` (brackets inside strings do not count). */
export function jsonDepth(text: string, stopAbove = Infinity): number {
  return scanDepth(text, stopAbove).depth;
}

/** JSON.parse that throws JsonTooDeep past `maxDepth` and SyntaxError on malformed text. */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  const scan = scanDepth(text, maxDepth);
  if (scan.depth > maxDepth) throw new JsonTooDeep(maxDepth, scan.member);
  return JSON.parse(text) as unknown;
}

/**
 * parseJson for request bodies: also throws JsonDuplicateMember when an object gives a member name
 * twice (compared once unescaped: `"a"` and `"\u0061"` are one name), at any depth. Well-formed
 * text only: malformed text is the SyntaxError, whatever names it repeats.
 */
export function parseJsonUniqueNames(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  const names = new MemberNames();
  const scan = scanDepth(text, maxDepth, names);
  if (scan.depth > maxDepth) throw new JsonTooDeep(maxDepth, scan.member);
  const value = JSON.parse(text) as unknown;
  if (names.duplicate !== undefined) throw new JsonDuplicateMember(names.duplicate);
  return value;
}
