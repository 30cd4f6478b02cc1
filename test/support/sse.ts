// Server-sent events as the tests read them: frames of `id:`, `event:`, `data:` (JSON) and comment lines.
export interface SseFrame {
  id?: string;
  event?: string;
  data?: any;
  comment?: string;
}

/** Reads `body` frame by frame until it ends or is aborted, calling `onFrame` for each. */
export async function readSse(body: ReadableStream<Uint8Array> | null, onFrame: (frame: SseFrame) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: SseFrame = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else if (line.startsWith('id: ')) frame.id = line.slice(4);
          else if (line.startsWith('event: ')) frame.event = line.slice(7);
          else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
        }
        onFrame(frame);
      }
    }
  } catch {
    /* aborted */
  }
}
