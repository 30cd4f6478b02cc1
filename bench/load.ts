// The load generator, in a child process of bench/run.ts so that autocannon's own event loop
// does not share the API's thread (it still shares the machine's cores, which run.ts measures).
// Protocol: the parent sends { id, options } over IPC; the child answers { id, result, cpuMs }.
import autocannon from 'autocannon';

process.on('message', async (msg: { id: number; options: autocannon.Options }) => {
  const before = process.cpuUsage();
  try {
    const result = await autocannon(msg.options);
    const cpu = process.cpuUsage(before);
    process.send!({ id: msg.id, result, cpuMs: (cpu.user + cpu.system) / 1000 });
  } catch (err) {
    process.send!({ id: msg.id, error: String((err as Error)?.stack ?? err) });
  }
});
process.on('disconnect', () => process.exit(0));
