// A webhook receiver on 127.0.0.1 for the webhook tests. It checks every request as a receiver
// would, with the reference implementation of Standard Webhooks (the `standardwebhooks` package,
// not the server's code): the signature, and the timestamp in seconds within 5 minutes of now.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  at: number; headers: IncomingHttpHeaders; body: string; json: any; status?: number;
  /** true, or why the request did not verify with any of the receiver's secrets (checked on arrival). */
  verified: true | string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The endpoint's secrets (a test adds them once the webhook is created, before any event). */
  secrets: string[];
  close(): Promise<unknown>;
}

/** true, or the reason the reference library refuses the request (a wrong signature, a timestamp out of tolerance…). */
export function verify(secret: string, headers: IncomingHttpHeaders, body: string): true | string {
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>);
    return true;
  } catch (err) {
    return (err as Error).message;
  }
}

/** A receiver: records every request; `answer` decides each status (and may hold the answer). */
export async function startReceiver(answer: (r: Received, n: number) => number | Promise<number> = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const secrets: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', async () => {
      const outcomes = secrets.map((s) => verify(s, req.headers, body));
      const verified = outcomes.includes(true) ? true : (outcomes[0] ?? 'no secret known');
      const r: Received = { at: Date.now(), headers: req.headers, body, json: JSON.parse(body), verified };
      received.push(r);
      const status = await answer(r, received.length);
      r.status = status;
      res.writeHead(status, { 'Content-Type': 'text/plain' }).end(`answer ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    secrets,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}
