/**
 * Reading the files the model commands take (`-f FILE`, `-` for stdin) and writing the model's
 * errors the way compilers do, so editors and CI annotate the line: `file:line:column: path: message`.
 */
import { readFileSync } from 'node:fs';
import type { CliIo } from './io.js';
import { UsageError } from './exit.js';

/** The name errors carry for a model read from stdin. */
export const STDIN_NAME = '<stdin>';

export interface ModelInput {
  text: string;
  /** The path as given, or STDIN_NAME: what error lines start with and the server's `fileName`. */
  name: string;
  fromStdin: boolean;
}

/** The text of `file`, or of stdin for `-`. A file that cannot be read is an error (exit 1) naming it. */
export async function readModelInput(io: CliIo, file: string): Promise<ModelInput> {
  if (file === '-') {
    if (io.streams.stdin.isTTY === true) throw new UsageError('-f -: stdin is a terminal; pipe the model into it, or give a file');
    let text = '';
    for await (const chunk of io.streams.stdin) text += chunk.toString();
    return { text, name: STDIN_NAME, fromStdin: true };
  }
  try {
    return { text: readFileSync(file, 'utf8'), name: file, fromStdin: false };
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}


