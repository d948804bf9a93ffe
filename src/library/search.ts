/** A case-insensitive substring pattern for `lower(col) LIKE ?`: `%`, `_` and `\` in the text match literally. */
export const likePattern = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
