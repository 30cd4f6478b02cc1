// The few parts of net-snmp (no typings published) the agent and the lab's simulated switch use.
declare module 'net-snmp' {
  export interface Varbind { oid: string; type: number; value: unknown }
  export interface Session {
    get(oids: string[], cb: (error: Error | null, varbinds: Varbind[]) => void): void;
    subtree(oid: string, maxRepetitions: number, feed: (varbinds: Varbind[]) => boolean | void, done: (error?: Error | null) => void): void;
    close(): void;
    on(event: 'error' | 'close', cb: (err?: Error) => void): void;
  }
  export const Version1: number;
  export const Version2c: number;
  export const Version3: number;
  export const SecurityLevel: { noAuthNoPriv: number; authNoPriv: number; authPriv: number };
  export const AuthProtocols: Record<string, number>;
  export const PrivProtocols: Record<string, number>;
  export const ObjectType: Record<string, number>;
  export const MibProviderType: { Scalar: string; Table: string };
  export const MaxAccess: Record<string, number>;
  export const AccessControlModelType: { None: number; Simple: number };
  export const AccessLevel: { None: number; ReadOnly: number; ReadWrite: number };
  export function isVarbindError(varbind: Varbind): boolean;
  export function createSession(target: string, community: string, options?: Record<string, unknown>): Session;
  export function createV3Session(target: string, user: Record<string, unknown>, options?: Record<string, unknown>): Session;
  export function createAgent(options: Record<string, unknown>, callback: (error: Error | null, data: unknown) => void, mib?: unknown): any;
  const snmp: {
    Version2c: number; Version3: number; SecurityLevel: typeof SecurityLevel; AuthProtocols: typeof AuthProtocols; PrivProtocols: typeof PrivProtocols;
    ObjectType: typeof ObjectType; MibProviderType: typeof MibProviderType; MaxAccess: typeof MaxAccess; AccessControlModelType: typeof AccessControlModelType;
    AccessLevel: typeof AccessLevel; isVarbindError: typeof isVarbindError; createSession: typeof createSession; createV3Session: typeof createV3Session;
    createAgent: typeof createAgent;
  };
  export default snmp;
}
