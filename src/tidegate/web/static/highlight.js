// The search's words and phrases marked in a line's text (`<mark data-testid="hit">`),
// as the search matches them (docs/search-syntax.md): a bare term at the start of a
// word, any case; a phrase anywhere, any case. Field tests, operators and whatever is
// negated are not text the line was found by, so they are not marked. Built from text
// nodes only: a line's text never becomes markup.

const SPACE = /\s/;
const PLAIN_END = /[\s()":]/; // a term is a run of anything else
const WORD = /[\p{L}\p{N}_]/u; // Python's \w, which the matcher uses for word starts

// A quoted string starting at `at` (a `"`): its text (`\"` and `\\` unescaped) and the
// index after its closing quote.
function quoted(query, at) {
  let text = "";
  let i = at + 1;
  while (i < query.length && query[i] !== '"') {
    if (query[i] === "\\" && (query[i + 1] === '"' || query[i + 1] === "\\")) i += 1;
    text += query[i];
    i += 1;
  }
  return { text, end: i + 1 };
}

// The index after a field's value starting at `at` (just after the `:`): a quoted
// value, a `[list]`, a `(group)`, a comparison, or a run of plain characters.
function skipValue(query, at) {
  let i = at;
  while (query[i] === "=") i += 1;
  if (query[i] === ">" || query[i] === "<") {
    i += query[i + 1] === "=" ? 2 : 1;
    while (i < query.length && SPACE.test(query[i])) i += 1;
  }
  if (query[i] === '"') return quoted(query, i).end;
  const close = { "[": "]", "(": ")" }[query[i]];
  if (close) {
    let depth = 0;
    for (; i < query.length; i += 1) {
      if (query[i] === '"') i = quoted(query, i).end - 1;
      else if (query[i] === "(" || query[i] === "[") depth += 1;
      else if (query[i] === ")" || query[i] === "]") {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
    }
    return i;
  }
  while (i < query.length && !SPACE.test(query[i]) && !"()".includes(query[i])) i += 1;
  return i;
}

// The words and phrases of a query that select lines by their text, not negated:
// `[{text, word}]`, `word` when it must start a word. Reads what the syntax reads and
// never fails: a query that does not parse still marks what it can.
export function searchedTexts(query) {
  const found = [];
  const negated = [false]; // per open group: is it negated (an odd number of `-`)?
  let minus = 0; // `-`s just read, before their operand
  let i = 0;
  const inNegation = () => negated[negated.length - 1] !== (minus % 2 === 1);
  while (i < query.length) {
    const c = query[i];
    if (SPACE.test(c)) {
      i += 1;
      minus = 0;
    } else if (c === "-") {
      minus += 1;
      i += 1;
    } else if (c === "(") {
      negated.push(inNegation());
      minus = 0;
      i += 1;
    } else if (c === ")") {
      if (negated.length > 1) negated.pop();
      minus = 0;
      i += 1;
    } else if (c === '"') {
      const { text, end } = quoted(query, i);
      if (text && !inNegation()) found.push({ text, word: false });
      minus = 0;
      i = end;
    } else {
      let end = i;
      while (end < query.length && !PLAIN_END.test(query[end])) end += 1;
      const term = query.slice(i, end);
      if (query[end] === ":") {
        i = skipValue(query, end + 1);
      } else {
        if (term !== "AND" && term !== "OR" && !inNegation()) found.push({ text: term, word: true });
        i = end;
      }
      minus = 0;
    }
  }
  return found;
}

// `text` lowered character by character, with where each lowered unit came from
// (lowering may change the length: "İ" is two units lowered).
function folded(text) {
  let lower = "";
  const origin = [];
  for (let i = 0; i < text.length; ) {
    const point = text.codePointAt(i);
    const width = point > 0xffff ? 2 : 1;
    const low = text.slice(i, i + width).toLowerCase();
    lower += low;
    for (let k = 0; k < low.length; k += 1) origin.push(i);
    i += width;
  }
  origin.push(text.length);
  return { lower, origin };
}

// The [start, end) ranges of `text` that the query's texts match, merged.
export function hitRanges(text, texts) {
  if (!texts.length || !text) return [];
  const { lower, origin } = folded(text);
  const ranges = [];
  for (const { text: wanted, word } of texts) {
    const needle = wanted.toLowerCase();
    if (!needle) continue;
    // A term that starts with a word character must start a word of the line.
    const atWord = word && WORD.test(needle[0]);
    for (let at = lower.indexOf(needle); at >= 0; at = lower.indexOf(needle, at + 1)) {
      if (atWord && at > 0 && WORD.test(lower[at - 1])) continue;
      ranges.push([origin[at], origin[at + needle.length]]);
    }
  }
  ranges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const merged = [];
  for (const range of ranges) {
    const last = merged[merged.length - 1];
    if (last && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
    else merged.push([...range]);
  }
  return merged;
}

let lastQuery = null;
let lastTexts = [];

// Fills `el` with `text`, the query's hits in it marked.
export function markHits(el, text, query) {
  if (query !== lastQuery) {
    lastQuery = query;
    lastTexts = searchedTexts(query || "");
  }
  const line = String(text ?? "");
  const nodes = [];
  let at = 0;
  for (const [start, end] of hitRanges(line, lastTexts)) {
    if (start > at) nodes.push(document.createTextNode(line.slice(at, start)));
    const mark = document.createElement("mark");
    mark.dataset.testid = "hit";
    mark.textContent = line.slice(start, end);
    nodes.push(mark);
    at = end;
  }
  if (at < line.length) nodes.push(document.createTextNode(line.slice(at)));
  el.replaceChildren(...nodes);
}
