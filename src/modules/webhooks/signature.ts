// Standard Webhooks signatures (https://www.standardwebhooks.com): secrets are `whsec_<base64>`,
// and `webhook-signature` is `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, several
// space-separated while a rotated secret still signs.
import { createHmac, randomBytes } from 'node:crypto';

export const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => sign(s, id, timestamp, body)).join(' ');
}
