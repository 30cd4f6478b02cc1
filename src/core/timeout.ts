// One way to give an awaited call a time bound (a Redis that is down makes ioredis and BullMQ
// wait): the promise, or a rejection after `ms`. A late rejection of the call is swallowed.
export function withTimeout<T>(call: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  call.catch(() => undefined);
  return Promise.race([call, bound]).finally(() => clearTimeout(timer));
}
