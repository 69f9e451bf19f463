/**
 * The `q` search of the list operations (clients, users, tenants), the same on both backends: the
 * text is split into words at white space, and a record matches when every word occurs, in any
 * order and any case (ASCII), in one of the searched columns: "Name Searchable" finds
 * "Searchable Name". A word matches literally: LIKE's wildcards in it are escaped.
 */

/** The words of a search; text of white space only is one word, so it never matches everything. */
export function searchWords(q: string): string[] {
  const words = [...new Set(q.split(/\s+/).filter((w) => w.length > 0))];
  return words.length > 0 ? words : [q];
}

/** A LIKE pattern finding `text` anywhere in a value, its wildcards escaped (ESCAPE '\'). */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The condition "every word in one of the columns", given how a backend names a parameter for a
 * pattern (`bind`) and spells a case-insensitive LIKE (`like`).
 */
export function everyWordCondition(q: string, columns: readonly string[], like: string, bind: (pattern: string) => string): string {
  return searchWords(q)
    .map((word) => {
      const param = bind(likePattern(word));
      return `(${columns.map((c) => `${c} ${like} ${param} ESCAPE '\\'`).join(' OR ')})`;
    })
    .join(' AND ');
}
