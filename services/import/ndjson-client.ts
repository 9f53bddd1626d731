/**
 * The client side of a bulk import: streams an NDJSON file (one ImportEntity in proto JSON per
 * line) to ImportService in numbered batches over REST (`POST /tenants/{tenantId}/import`),
 * several in flight, reporting progress (entities, rate, ETA) after each committed batch. An
 * import interrupted for any reason resumes where the server says it stands (`GET
 * /tenants/{tenantId}/imports/{importId}`): committed batches are never sent again, and a batch
 * sent twice is written once. Only Node's own modules: the `authz` command and applications
 * import it as it is.
 *
 * Lines travel as they are in the file (each checked to be one JSON object first), so the client
 * never decodes an entity; the server validates every field and names the line at fault.
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { ImportCounts as ImportCountsMessage } from '../../gen/authz/v1/import_service_pb.js';

/** Entities in one batch: the server's limit. */
export const MAX_BATCH_ENTITIES = 5000;
/** JSON bytes of one batch: under the server's 4 MiB body limit with room for the envelope. */
export const MAX_BATCH_BYTES = 3 * 1024 * 1024;

/** What an import has written, by kind: the fields of the ImportCounts message. */
export type ImportCounts = Omit<ImportCountsMessage, '$typeName' | '$unknown'>;

/** Where an import stands, as the client reports it after each committed batch. */
export interface ImportProgress {
  /** Entities committed by this run (batches committed before it are not counted). */
  entities: number;
  /** Batches committed by this run, and batches the server had committed before (sent again). */
  batches: number;
  /** The line the next batch starts at: where the import would resume. */
  nextLine: number;
  /** Bytes of the file read up to the last committed line, and the file's size when known. */
  bytes: number;
  totalBytes?: number;
  /** Milliseconds since this run started, entities per second, and the time left when the size is known. */
  elapsedMs: number;
  rate: number;
  etaMs?: number;
}

export interface ImportResult extends ImportProgress {
  importId: string;
  /** The import's last committed batch. */
  lastSequence: number;
  /** The revision of the last batch this run committed (0 when it committed none). */
  revision: number;
  counts: ImportCounts;
}

export interface ImportOptions {
  /** The control plane, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Sent as `x-api-key`: a platform key, or a user key of the tenant. */
  apiKey: string;
  tenantId: string;
  /** Names the import; the same id resumes it. */
  importId: string;
  /** A file path, or the NDJSON text as a stream of chunks. */
  source: string | AsyncIterable<string | Uint8Array>;
  /** Entities per batch, at most MAX_BATCH_ENTITIES (the default). */
  batchSize?: number;
  /** Batches sent before the first is answered (default 2): the server commits them in order. */
  inFlight?: number;
  /** Ask the server where the import stands and continue from there (default true); false starts at line 1. */
  resume?: boolean;
  /** Called after each committed batch. */
  onProgress?: (p: ImportProgress) => void;
  /** Times a batch is sent again after a failure that may pass (network, `unavailable`); default 3. */
  retries?: number;
  /** A fetch to send with (default: the global one), e.g. one with a TLS agent. */
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

/** An import that failed: the service's error (or the line the client refused), and where to resume. */
export class ImportError extends Error {
  constructor(
    message: string,
    /** The Connect code (`invalid_argument`, …), `malformed_line`, or `network`. */
    readonly code: string,
    /** Where the next run of the same import starts (everything before it is committed). */
    readonly resumeLine: number,
    /** The line at fault, when the error names one. */
    readonly line?: number,
    /** The request field at fault (`entities[3].resource.type`), from the error's details. */
    readonly field?: string,
    /** The `reason` of the error's ErrorInfo detail. */
    readonly reason?: string,
  ) {
    super(message);
    this.name = 'ImportError';
  }
}

interface Batch {
  sequence: number;
  firstLine: number;
  lines: string[];
  /** Bytes of the file up to the batch's end. */
  endByte: number;
}

interface BatchAnswer {
  applied: boolean;
  revision: number;
  nextLine: number;
  counts: ImportCounts;
}

const NO_COUNTS: ImportCounts = { resources: 0, subjects: 0, resourceEdges: 0, scopeLinks: 0, ownershipGrants: 0, memberships: 0, roleAssignments: 0 };

/** Where an import stands on the server: its last batch and next line; undefined when it has none. */
export async function importStatus(opts: Pick<ImportOptions, 'baseUrl' | 'apiKey' | 'tenantId' | 'importId' | 'fetch' | 'signal'>): Promise<{ lastSequence: number; nextLine: number; revision: number; counts: ImportCounts } | undefined> {
  const res = await (opts.fetch ?? fetch)(`${trimSlash(opts.baseUrl)}/tenants/${encodeURIComponent(opts.tenantId)}/imports/${encodeURIComponent(opts.importId)}`, {
    headers: { 'x-api-key': opts.apiKey }, signal: opts.signal,
  });
  const text = await res.text();
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw errorOf(res.status, text, 1);
  const j = JSON.parse(text) as { lastSequence?: number; nextLine?: number; revision?: number; counts?: Partial<ImportCounts> };
  return { lastSequence: j.lastSequence ?? 0, nextLine: j.nextLine ?? 1, revision: j.revision ?? 0, counts: { ...NO_COUNTS, ...j.counts } };
}

/**
 * Imports an NDJSON file. Resolves when every line is committed; rejects with an ImportError
 * naming the line at fault and the line to resume from. Blank lines are skipped.
 */
export async function importNdjson(opts: ImportOptions): Promise<ImportResult> {
  const batchSize = opts.batchSize ?? MAX_BATCH_ENTITIES;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH_ENTITIES) throw new RangeError(`batchSize must be 1..${MAX_BATCH_ENTITIES}`);
  const inFlight = Math.max(1, opts.inFlight ?? 2);
  const retries = opts.retries ?? 3;
  const send = opts.fetch ?? fetch;
  const url = `${trimSlash(opts.baseUrl)}/tenants/${encodeURIComponent(opts.tenantId)}/import`;
  const head = `{"importId":${JSON.stringify(opts.importId)},"sequence":`;

  const status = opts.resume === false ? undefined : await importStatus(opts);
  let nextSequence = (status?.lastSequence ?? 0) + 1;
  const startLine = status?.nextLine ?? 1;
  const totalBytes = typeof opts.source === 'string' ? statSync(opts.source).size : undefined;

  const started = performance.now();
  const progress: ImportProgress = { entities: 0, batches: 0, nextLine: startLine, bytes: 0, totalBytes, elapsedMs: 0, rate: 0 };
  let counts = { ...NO_COUNTS };
  let revision = 0;
  let lastSequence = status?.lastSequence ?? 0;
  let skippedBytes = 0;

  /**
   * Sends one batch (again after a failure that may pass, or after `predecessor`, the batch before
   * it still in flight, when the server took it first) and returns the server's answer.
   */
  const post = async (b: Batch, signal: AbortSignal, predecessor?: Promise<unknown>): Promise<BatchAnswer> => {
    const body = `${head}${b.sequence},"firstLine":${b.firstLine},"entities":[${b.lines.join(',')}]}`;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      let text: string;
      try {
        res = await send(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-api-key': opts.apiKey }, signal });
        text = await res.text();
      } catch (err) {
        if (signal.aborted) throw new ImportError(`batch ${b.sequence} was not sent to the end: ${String(signal.reason ?? 'aborted')}`, 'aborted', progress.nextLine);
        if (attempt >= retries) throw new ImportError(`the service could not be reached: ${(err as Error).message}`, 'network', progress.nextLine);
        await pause(attempt);
        continue;
      }
      if (res.status === 200) {
        const j = JSON.parse(text) as Partial<BatchAnswer>;
        return { applied: j.applied ?? false, revision: j.revision ?? 0, nextLine: j.nextLine ?? b.firstLine + b.lines.length, counts: { ...NO_COUNTS, ...j.counts } };
      }
      // The server writes a batch once, so one whose answer was lost may be sent again.
      if ((res.status === 502 || res.status === 503 || res.status === 504) && attempt < retries && !signal.aborted) {
        await pause(attempt);
        continue;
      }
      // Taken before the batch it follows (on another connection or replica): again after it.
      if (res.status === 409 && predecessor !== undefined && /"code":\s*"aborted"/.test(text)) {
        await predecessor.catch(() => undefined);
        predecessor = undefined;
        if (!signal.aborted) continue;
      }
      throw errorOf(res.status, text, progress.nextLine, b.firstLine);
    }
  };

  /** Batches sent and not yet accounted for, oldest first. */
  const pending: { batch: Batch; answer: Promise<BatchAnswer>; abort: AbortController }[] = [];
  const abortAll = (reason?: unknown) => pending.forEach((p) => p.abort.abort(reason));
  const onAbort = () => abortAll(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  /** Waits for the oldest batch in flight and accounts for it; throws its failure. */
  const settleOldest = async () => {
    const { batch, answer } = pending[0];
    const a = await answer;
    pending.shift();
    progress.batches++;
    progress.nextLine = a.nextLine;
    lastSequence = batch.sequence;
    if (a.applied) {
      progress.entities += batch.lines.length;
      revision = a.revision;
      counts = Object.fromEntries(Object.keys(NO_COUNTS).map((k) => [k, counts[k as keyof ImportCounts] + a.counts[k as keyof ImportCounts]])) as unknown as ImportCounts;
    }
    progress.bytes = batch.endByte;
    progress.elapsedMs = performance.now() - started;
    progress.rate = progress.elapsedMs > 0 ? (progress.entities * 1000) / progress.elapsedMs : 0;
    const done = progress.bytes - skippedBytes;
    progress.etaMs = totalBytes !== undefined && done > 0 ? ((totalBytes - progress.bytes) * progress.elapsedMs) / done : undefined;
    opts.onProgress?.({ ...progress });
  };

  let batch: Batch | undefined;
  let batchBytes = 0;
  const flush = async () => {
    if (!batch) return;
    const b = batch;
    batch = undefined;
    batchBytes = 0;
    const abort = new AbortController();
    if (opts.signal?.aborted) abort.abort(opts.signal.reason);
    const answer = post(b, abort.signal, pending.at(-1)?.answer);
    // A failed batch stops the ones behind it (a batch waits on the server for its predecessor).
    answer.catch(() => pending.forEach((p) => p.batch.sequence > b.sequence && p.abort.abort('an earlier batch failed')));
    pending.push({ batch: b, answer, abort });
    if (pending.length >= inFlight) await settleOldest();
  };

  try {
    let lineNo = 0;
    let bytes = 0;
    try {
      for await (const raw of lines(opts.source)) {
        lineNo++;
        bytes += Buffer.byteLength(raw) + 1;
        if (lineNo < startLine) {
          skippedBytes = bytes;
          continue;
        }
        const line = raw.trim();
        if (line === '') {
          // Lines of a batch are consecutive (entity i is line firstLine + i): a blank one ends it.
          await flush();
          continue;
        }
        checkLine(line, lineNo, progress.nextLine);
        if (batch && (batch.lines.length >= batchSize || batchBytes + line.length > MAX_BATCH_BYTES)) await flush();
        batch ??= { sequence: nextSequence++, firstLine: lineNo, lines: [], endByte: 0 };
        batch.lines.push(line);
        batch.endByte = bytes;
        batchBytes += line.length + 1;
      }
      await flush();
    } catch (err) {
      // The file failed (a malformed line, a read error): the lines before it are sent, and count.
      if (!(err instanceof ImportError && err.code !== 'malformed_line')) {
        await flush();
        while (pending.length > 0) await settleOldest();
      }
      throw err;
    }
    while (pending.length > 0) await settleOldest();
  } catch (err) {
    abortAll('the import failed');
    await Promise.allSettled(pending.map((p) => p.answer));
    if (err instanceof ImportError) throw withResume(err, progress.nextLine);
    throw err;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
  return { ...progress, importId: opts.importId, lastSequence, revision, counts };
}

/** Lines of a file or a stream of chunks (without their line ends). */
function lines(source: ImportOptions['source']): AsyncIterable<string> {
  const input = typeof source === 'string' ? createReadStream(source) : Readable.from(source);
  return createInterface({ input, crlfDelay: Infinity });
}

/** A line must be one JSON object (the server checks what it holds). */
function checkLine(line: string, lineNo: number, resumeLine: number): void {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (err) {
    throw new ImportError(`line ${lineNo}: not valid JSON (${(err as Error).message})`, 'malformed_line', resumeLine, lineNo);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new ImportError(`line ${lineNo}: must be a JSON object (one entity)`, 'malformed_line', resumeLine, lineNo);
  }
}

/** The service's error answer as an ImportError; the line from the message, or from the field and the batch's first line. */
function errorOf(status: number, text: string, resumeLine: number, firstLine?: number): ImportError {
  let code = `http_${status}`;
  let message = text.slice(0, 500);
  let field: string | undefined;
  let reason: string | undefined;
  try {
    const j = JSON.parse(text) as { code?: string; message?: string; details?: { reason?: string; field?: string }[] };
    code = j.code ?? code;
    message = j.message ?? message;
    field = j.details?.[0]?.field || undefined;
    reason = j.details?.[0]?.reason;
  } catch {
    // not a JSON error body: its text is the message
  }
  let line = /^line (\d+):/.exec(message)?.[1];
  if (line === undefined && firstLine !== undefined && field) {
    const index = /^entities\[(\d+)\]/.exec(field)?.[1];
    if (index !== undefined) line = String(firstLine + Number(index));
  }
  return new ImportError(message, code, resumeLine, line === undefined ? undefined : Number(line), field, reason);
}

function withResume(err: ImportError, resumeLine: number): ImportError {
  return new ImportError(err.message, err.code, resumeLine, err.line, err.field, err.reason);
}

const pause = (attempt: number) => new Promise<void>((resolve) => setTimeout(resolve, 200 * 2 ** attempt));
const trimSlash = (url: string) => url.replace(/\/+$/, '');

/** One line of text for a terminal: entities, rate, ETA. */
export function formatProgress(p: ImportProgress): string {
  const pct = p.totalBytes ? ` ${((100 * p.bytes) / p.totalBytes).toFixed(1)}%` : '';
  const eta = p.etaMs === undefined ? '' : `, ETA ${duration(p.etaMs)}`;
  return `${p.entities.toLocaleString('en-US')} entities${pct}, ${Math.round(p.rate).toLocaleString('en-US')}/s${eta}, next line ${p.nextLine}`;
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/**
 * A progress reporter for `onProgress` that redraws one line on a terminal (`out` a TTY) and
 * stays silent otherwise, so that a pipe or a log file gets no control characters.
 */
export function terminalProgress(out: NodeJS.WriteStream = process.stderr): (p: ImportProgress) => void {
  if (!out.isTTY) return () => {};
  return (p) => out.write(`\r\x1b[2K${formatProgress(p)}`);
}
