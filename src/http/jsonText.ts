// JSON made elsewhere, spliced into an answer as it is. No imports but node's: the
// topology threads' bundle takes this file too (layout.ts).
import { randomUUID } from 'node:crypto';

/**
 * JSON made elsewhere (a topology thread serializes its large answers), put into an answer as it
 * is, anywhere in its value: sendJson splices it in, so the event loop neither receives the object
 * graph nor stringifies it. UTF-8 bytes stay off the JavaScript heap and are sent as they are.
 */
export class JsonText {
  constructor(readonly json: string | Uint8Array) {}

  /** A placeholder while sendJson stringifies the rest (a random token: no client string can forge it). */
  toJSON(): string {
    splicing.push(this.json);
    return `${SPLICE_TOKEN}${splicing.length - 1}`;
  }
}

const SPLICE_TOKEN = `jsontext-${randomUUID()}-`;
const SPLICED = new RegExp(`"${SPLICE_TOKEN}(\\d+)"`, 'g');
/** The JSON of the JsonTexts met by the JSON.stringify running now (it is synchronous). */
let splicing: Array<string | Uint8Array> = [];
const bytesOf = (json: string | Uint8Array) => (typeof json === 'string' ? Buffer.from(json) : Buffer.from(json.buffer, json.byteOffset, json.byteLength));

/** JSON.stringify of `value`, or, with a JsonText in it, the bytes with each one's JSON spliced in. */
export function toJsonBody(value: unknown): string | Buffer {
  splicing = [];
  try {
    const json = JSON.stringify(value);
    if (!splicing.length) return json;
    const parts: Buffer[] = [];
    let last = 0;
    for (const m of json.matchAll(SPLICED)) {
      parts.push(Buffer.from(json.slice(last, m.index)), bytesOf(splicing[Number(m[1])]!));
      last = m.index + m[0].length;
    }
    parts.push(Buffer.from(json.slice(last)));
    return Buffer.concat(parts);
  } finally {
    splicing = [];
  }
}
