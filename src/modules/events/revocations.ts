// What a revocation names (hub.ts `revoke`), and the one call a route makes for it. A stream is
// reached through its credential (the key or the session it was opened with), its user, and, for
// an API key, its organization's keys as a whole (API access turned off).
import type { RequestInput } from '../../http/pipeline.js';
import type { Scope } from '../../core/scope.js';

/** `end`: the credential is gone for good (streams end at once); `recheck`: it changed (each stream's credential is resolved again). */
export type RevocationKind = 'end' | 'recheck';

export const revocationSubject = {
  /** A user's or a daemon's API key (also the stream count's credential, streamLimit.ts). */
  apiKey: (id: string) => `key:${id}`,
  /** A session, by the SHA-256 hex of its cookie (as sessions are stored). */
  session: (idHash: string) => `session:${idHash}`,
  user: (id: string) => `user:${id}`,
  organizationKeys: (organizationId: string) => `org-keys:${organizationId}`,
  /** A share link's streams (src/modules/shareLinks): ended when it is revoked. */
  shareLink: (id: string) => `share:${id}`,
};

/** Subjects as a log line may show them: a session's digest left out (it is what the sessions table stores). */
export const loggable = (subjects: string[]) => subjects.map((x) => (x.startsWith('session:') ? 'session:…' : x)).join(', ');

/** How long a revocation may hold its request's answer: the hubs' wait (2 s) and a margin for the connection. */
const REVOCATION_AFTER_COMMIT_MS = 3000;

/**
 * Once the request's writes are committed and before it answers: the streams of `subjects` ended
 * or checked again on every API process, so no event committed after the answer reaches
 * them. Nothing happens if the request fails (its writes rolled back).
 */
export function revokeStreamsAfterCommit(req: Pick<RequestInput<Scope | undefined>, 'services' | 'afterCommit'>, kind: RevocationKind, subjects: string[]): void {
  req.afterCommit(`${kind === 'end' ? 'end' : 'check again'} the event streams of ${loggable(subjects)}`, () => req.services.events.revoke(subjects, kind), REVOCATION_AFTER_COMMIT_MS);
}
