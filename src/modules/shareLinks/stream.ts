// A share link's stream: the event hub's stream of the link's network, reduced to "the map
// changed". An event's data (a host with every field) is more than the map shows, and event ids
// count every organization's changes, so neither leaves: each batch the hub hands out becomes one
// `changed` frame without id or data, after which the page reads the map again. Comments
// (heartbeats), `retry` and the hub's own `ended` / `dropped` frames pass, without their cursor.
import { Transform, type TransformCallback } from 'node:stream';

export const CHANGED_FRAME = 'event: changed\ndata: {}\n\n';

export class ShareFrames extends Transform {
  private pending = '';

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, done: TransformCallback): void {
    this.pending += chunk.toString();
    const frames = this.pending.split('\n\n');
    this.pending = frames.pop() ?? '';
    let out = '';
    let changed = false;
    for (const frame of frames) {
      if (!frame) continue;
      if (/^event: /m.test(frame)) out += `${withoutCursor(frame)}\n\n`;
      else if (/^data: /m.test(frame)) changed = true;
      else out += `${frame}\n\n`; // comments, retry
    }
    if (changed) out += CHANGED_FRAME;
    done(null, out || undefined);
  }
}

/** An `ended` / `dropped` frame with its data's last_event_id left out. */
function withoutCursor(frame: string): string {
  return frame.replace(/^data: (.*)$/m, (_line, json: string) => {
    try {
      const { last_event_id: _cursor, ...rest } = JSON.parse(json) as Record<string, unknown>;
      return `data: ${JSON.stringify(rest)}`;
    } catch {
      return 'data: {}';
    }
  });
}
