// Quiet hours of an alert rule: a daily window in an IANA time zone ('22:00'–'07:00' crosses
// midnight) during which nothing of the rule is sent; its digest is held and goes out when the
// window ends (the webhook delivery's next_attempt_at, the e-mail's, both swept by the workers).
export interface QuietHours {
  start: string;
  end: string;
  timezone: string;
}

const minutesOf = (hhmm: string) => {
  const [h, m] = hhmm.split(':').map(Number);
  return h! * 60 + m!;
};

/** The wall-clock minute of the day (0..1439) of `at` in `timezone`. */
function localMinute(at: Date, timezone: string): number {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: timezone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(at);
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return get('hour') * 60 + get('minute');
}

/**
 * When the quiet hours that hold `at` end, or null when `at` is outside them (or there are none).
 * The end is counted in wall-clock minutes from `at` (a DST change inside the window moves it by
 * the hour it adds or removes, no more).
 */
export function quietUntil(q: QuietHours | null | undefined, at: Date): Date | null {
  if (!q) return null;
  const start = minutesOf(q.start);
  const end = minutesOf(q.end);
  if (start === end) return null; // an empty window
  const now = localMinute(at, q.timezone);
  const inside = start < end ? now >= start && now < end : now >= start || now < end;
  if (!inside) return null;
  const minutesLeft = (end - now + 1440) % 1440;
  const until = new Date(at.getTime() + minutesLeft * 60_000);
  until.setUTCSeconds(0, 0);
  return until;
}
