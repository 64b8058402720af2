// Reading a daemon's log output as JSON lines, strictly: JSON.parse keeps the last of two
// equal keys without a word, so keys are found by walking the text itself.

/**
 * The keys that appear twice in one object anywhere in `text` (a JSON value), as
 * "path.key"; throws where `text` is not JSON.
 */
export function duplicateKeys(text: string): string[] {
  JSON.parse(text); // well-formed first: the walk below trusts the grammar
  const found: string[] = [];
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\r\n'.includes(text[i]!)) i++;
  };
  const str = (): string => {
    const start = i;
    i++; // opening quote
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const seen = new Set<string>();
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        const key = str();
        if (seen.has(key)) found.push(path === '' ? key : `${path}.${key}`);
        seen.add(key);
        ws();
        i++; // ':'
        value(path === '' ? key : `${path}.${key}`);
        ws();
        if (text[i++] === '}') return;
      }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        value(`${path}[${n}]`);
        ws();
        if (text[i++] === ']') return;
      }
    } else if (c === '"') {
      str();
    } else {
      while (i < text.length && !',}] \t\r\n'.includes(text[i]!)) i++;
    }
  };
  value('');
  return found;
}

export interface LogRecord {
  /** The level's name ("info", "warn"...): levelRank (shared/log-text.ts) compares them. */
  level: string;
  /** ISO 8601, UTC. */
  time: string;
  msg: string;
  component?: string;
  [key: string]: unknown;
}

/**
 * Every line of a daemon's stderr as a log record; throws naming the first line that is
 * not a JSON object or that repeats a key.
 */
export function strictLogLines(output: string): LogRecord[] {
  const records: LogRecord[] = [];
  for (const line of output.split('\n')) {
    if (line.trim() === '') continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      throw new Error(`not a JSON line: ${line}`);
    }
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) throw new Error(`not a JSON object: ${line}`);
    const dup = duplicateKeys(line);
    if (dup.length > 0) throw new Error(`repeated key ${dup.join(', ')} in: ${line}`);
    const { level, time } = rec as { level?: unknown; time?: unknown };
    if (typeof level !== 'string' || !/^(trace|debug|info|warn|error|fatal)$/.test(level)) throw new Error(`no level name in: ${line}`);
    if (typeof time !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(time)) throw new Error(`no ISO 8601 time in: ${line}`);
    records.push(rec as LogRecord);
  }
  return records;
}
