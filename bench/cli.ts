/**
 * The one option parser of the bench entry points (run.ts, capacity.ts, multitenant-load.ts,
 * signing.ts). Each declares its flags once (type, default, smoke default, environment variable,
 * bounds, help line); the parsed values and the `--help` text both come from that declaration, so
 * the two cannot drift. Flags win over the environment, the environment over the defaults;
 * `--smoke` only changes the defaults, so `--smoke --duration 3` still means 3 s. Unknown flags
 * and malformed values are errors, never silently replaced by a default.
 */
import { parseArgs } from 'node:util';

interface Common {
  help: string;
  /** Environment variable read when the flag is absent. */
  env?: string;
  /** Placeholder in the usage line (default: `<n>`, `<a,b>`, `<s>`). */
  meta?: string;
}

export interface NumberFlag extends Common {
  kind: 'number';
  default: number;
  smoke?: number;
  /** Smallest accepted value (default 1). */
  min?: number;
  /** Whole numbers only (default true). */
  integer?: boolean;
}

/** Comma-separated numbers, deduplicated and sorted. */
export interface NumberListFlag extends Common {
  kind: 'numbers';
  default: readonly number[];
  smoke?: readonly number[];
  min?: number;
  integer?: boolean;
}

/** Comma-separated names; `choices` restricts them. */
export interface NameListFlag extends Common {
  kind: 'names';
  default: readonly string[];
  choices?: readonly string[];
}

/** One value; `choices` restricts it. */
export interface StringFlag extends Common {
  kind: 'string';
  default: string;
  choices?: readonly string[];
}

export interface BooleanFlag extends Common {
  kind: 'boolean';
}

export type Flag = NumberFlag | NumberListFlag | NameListFlag | StringFlag | BooleanFlag;
export type FlagSpec = Record<string, Flag>;

export type FlagValues<S extends FlagSpec> = {
  [K in keyof S]: S[K] extends NumberFlag ? number : S[K] extends NumberListFlag ? number[] : S[K] extends NameListFlag ? string[] : S[K] extends StringFlag ? string : boolean;
} & { smoke: boolean };

export interface Command<S extends FlagSpec> {
  /** `usage: node dist/bench/x.js [options]` and anything else above the flags. */
  usage: string;
  flags: S;
  /** Prose under the flags. */
  notes?: string;
  /** Whether `--smoke` exists (it does when any flag has a smoke default). */
  smoke?: string;
}

/** Thrown for a bad command line; entry points print it with the usage and exit 2. */
export class UsageError extends Error {}

function number(name: string, raw: string, f: { min?: number; integer?: boolean }): number {
  const min = f.min ?? 1;
  const integer = f.integer ?? true;
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${raw}"`);
  }
  return n;
}

function defaultText(f: Flag): string {
  const show = (v: number | string | readonly (number | string)[]) => (Array.isArray(v) ? v.join(',') : String(v));
  if (f.kind === 'boolean') return '';
  const smoke = 'smoke' in f && f.smoke !== undefined ? `; smoke ${show(f.smoke)}` : '';
  const def = f.kind === 'names' && f.default.length === 0 ? 'all' : show(f.default);
  if (def === '') return f.env ? `env ${f.env}` : '';
  return `${f.env ? `env ${f.env}, ` : ''}default ${def}${smoke}`;
}

/** The `--help` text, generated from the declaration. */
export function usageText<S extends FlagSpec>(cmd: Command<S>): string {
  const rows: Array<[string, string]> = Object.entries(cmd.flags).map(([name, f]) => {
    const meta = f.kind === 'boolean' ? '' : ` ${f.meta ?? (f.kind === 'numbers' || f.kind === 'names' ? '<a,b>' : f.kind === 'string' ? '<s>' : '<n>')}`;
    const def = defaultText(f);
    const choices = f.kind === 'names' && f.choices ? `; one or more of: ${f.choices.join(' ')}` : f.kind === 'string' && f.choices ? `; one of: ${f.choices.join(' ')}` : '';
    return [`--${name}${meta}`, `${f.help}${def ? ` (${def})` : ''}${choices}`];
  });
  if (hasSmoke(cmd)) rows.push(['--smoke', cmd.smoke ?? 'quick check with the smoke defaults above (explicit flags still win)']);
  rows.push(['--help', 'this text']);
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  const lines = rows.map(([flag, text]) => `  ${flag.padEnd(width)}${text}`);
  return [cmd.usage, ...lines, ...(cmd.notes ? [cmd.notes] : [])].join('\n');
}

const hasSmoke = (cmd: Command<FlagSpec>) => cmd.smoke !== undefined || Object.values(cmd.flags).some((f) => 'smoke' in f && f.smoke !== undefined);

/** The values of a command line, or 'help'. Throws UsageError on unknown flags and bad values. */
export function parseCommandLine<S extends FlagSpec>(cmd: Command<S>, argv: readonly string[], env: NodeJS.ProcessEnv = {}): FlagValues<S> | 'help' {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const [name, f] of Object.entries(cmd.flags)) options[name] = { type: f.kind === 'boolean' ? 'boolean' : 'string' };
  if (hasSmoke(cmd)) options.smoke = { type: 'boolean' };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help === true) return 'help';
  const smoke = values.smoke === true;
  const out: Record<string, unknown> = { smoke };
  for (const [name, f] of Object.entries(cmd.flags)) {
    const given = values[name];
    if (f.kind === 'boolean') {
      out[name] = given === true;
      continue;
    }
    const raw = typeof given === 'string' ? given : f.env ? env[f.env] : undefined;
    const present = raw !== undefined && raw !== '';
    switch (f.kind) {
      case 'number':
        out[name] = present ? number(name, raw, f) : smoke && f.smoke !== undefined ? f.smoke : f.default;
        break;
      case 'numbers':
        out[name] = present ? [...new Set(raw.split(',').map((s) => number(name, s, f)))].sort((a, b) => a - b) : [...(smoke && f.smoke !== undefined ? f.smoke : f.default)];
        break;
      case 'names': {
        const names = present ? raw.split(',').map((s) => s.trim()).filter(Boolean) : [...f.default];
        const unknown = f.choices ? names.filter((n) => !f.choices!.includes(n)) : [];
        if (unknown.length) throw new UsageError(`--${name}: unknown ${unknown.join(', ')}; known: ${f.choices!.join(', ')}`);
        out[name] = names;
        break;
      }
      case 'string':
        if (present && f.choices && !f.choices.includes(raw)) throw new UsageError(`--${name}: unknown ${raw}; known: ${f.choices.join(', ')}`);
        out[name] = present ? raw : f.default;
        break;
    }
  }
  return out as FlagValues<S>;
}

/**
 * For an entry point's main(): the parsed values, or an exit code after printing the usage
 * (0 for --help on stdout, `badUsageCode` for a bad command line on stderr).
 */
export function commandLine<S extends FlagSpec>(cmd: Command<S>, argv: readonly string[], env: NodeJS.ProcessEnv = {}, badUsageCode = 2): FlagValues<S> | number {
  try {
    const parsed = parseCommandLine(cmd, argv, env);
    if (parsed !== 'help') return parsed;
    process.stdout.write(`${usageText(cmd)}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`${err.message}\n${usageText(cmd)}\n`);
    return badUsageCode;
  }
}

/** Declares a command (keeps the flags' literal kinds for FlagValues). */
export function defineCommand<S extends FlagSpec>(cmd: Command<S>): Command<S> {
  return cmd;
}
