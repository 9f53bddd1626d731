/**
 * Questions on a terminal (prompts on stderr, so stdout keeps only results), and the first line
 * of a piped stdin, which is how scripts hand `authz login` a key without putting it in argv.
 */
import { createInterface } from 'node:readline/promises';
import type { CliIo } from './io.js';

/** Whether stdin is a terminal a person answers at. */
export const interactive = (io: CliIo) => io.streams.stdin.isTTY === true && typeof io.streams.stdin.setRawMode === 'function';

/** A visible answer; `fallback` when the answer is empty. */
export async function ask(io: CliIo, question: string, fallback?: string): Promise<string> {
  const rl = createInterface({ input: io.streams.stdin as unknown as NodeJS.ReadableStream, output: io.streams.stderr as unknown as NodeJS.WritableStream, terminal: true });
  try {
    const answer = (await rl.question(fallback ? `${question} [${fallback}]: ` : `${question}: `)).trim();
    return answer === '' ? (fallback ?? '') : answer;
  } finally {
    rl.close();
  }
}

/** An answer typed without echo (an API key). Ctrl-C rejects. */
export function askHidden(io: CliIo, question: string): Promise<string> {
  const stdin = io.streams.stdin;
  io.err(`${question}: `);
  return new Promise((resolve, reject) => {
    let answer = '';
    const finish = (err?: Error) => {
      stdin.removeListener('data', onData);
      stdin.setRawMode!(false);
      stdin.pause();
      io.err('\n');
      if (err) reject(err);
      else resolve(answer.trim());
    };
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish();
        if (ch === '\u0003') return finish(new Error('canceled'));
        if (ch === '\u007f' || ch === '\b') answer = answer.slice(0, -1);
        else if (ch >= ' ') answer += ch;
      }
    };
    stdin.setRawMode!(true);
    stdin.resume();
    stdin.on('data', onData);
  });
}

/** The first line of a piped stdin (empty when it ends first). */
export async function firstLineOf(io: CliIo): Promise<string> {
  let text = '';
  for await (const chunk of io.streams.stdin) {
    text += chunk.toString();
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0].trim();
}
