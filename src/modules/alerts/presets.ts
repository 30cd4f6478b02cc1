// Webhook presets: the body a webhook's `preset` gives a delivery, so that a chat or
// push service's own webhook URL can be an endpoint as it is. `generic` is the signed Standard
// Webhooks JSON ({type, timestamp, data}) every delivery has had. The others turn the payload into
// a title and text lines (an alert digest: one line per change) and shape them as the product
// documents its incoming messages:
//  - ntfy: "publish as JSON" (docs.ntfy.sh/publish/, Publish as JSON): a POST to the server's root
//    URL of {topic, title, message, priority, tags}; the endpoint URL is the topic's
//    (https://ntfy.sh/mytopic), so the topic is its last path segment and the POST goes to the root.
//  - Gotify: POST /message?token=<app token> with {title, message, priority} (gotify.net/docs,
//    "Push messages"); the endpoint URL carries the token.
//  - Slack: incoming webhooks take {text} (api.slack.com/messaging/webhooks).
//  - Discord: Execute Webhook takes {content} up to 2000 characters, and username
//    (discord.com/developers/docs/resources/webhook#execute-webhook).
//  - Microsoft Teams: a message with one Adaptive Card attachment (learn.microsoft.com, "Create
//    Incoming Webhooks" / "Send Adaptive Cards using an Incoming Webhook"; Workflows webhooks take the
//    same), content type application/vnd.microsoft.card.adaptive.
// The signature headers stay on every request (a receiver that does not check them ignores them).
export const WEBHOOK_PRESETS = ['generic', 'ntfy', 'gotify', 'slack', 'discord', 'teams'] as const;
export type WebhookPreset = (typeof WEBHOOK_PRESETS)[number];

/** A delivery's payload as stored: the Standard Webhooks envelope. */
interface Envelope {
  type?: string;
  timestamp?: string;
  data?: any;
}

/** Title and lines of a payload: an alert digest's own, else the event's type and entity. */
export function messageOf(payload: Envelope): { title: string; lines: string[] } {
  if (payload.type === 'alert.digest' && payload.data) return { title: payload.data.title, lines: payload.data.lines ?? [] };
  const d = payload.data ?? {};
  const what = d.data?.name ?? d.entity_id ?? '';
  return { title: `netinventory: ${payload.type ?? 'event'}`, lines: [`${payload.type ?? 'event'} ${what}`.trim()] };
}

const DISCORD_LIMIT = 2000;

/** The URL to POST to and the JSON body, for an endpoint of `preset`. */
export function presetRequest(preset: string | null | undefined, url: string, payload: Envelope): { url: string; body: string } {
  if (!preset || preset === 'generic') return { url, body: JSON.stringify(payload) };
  const { title, lines } = messageOf(payload);
  const text = lines.join('\n');
  switch (preset as WebhookPreset) {
    case 'ntfy': {
      const target = new URL(url);
      const topic = decodeURIComponent(target.pathname.split('/').filter(Boolean).pop() ?? '');
      target.pathname = target.pathname.replace(/[^/]*\/?$/, '');
      return { url: target.toString(), body: JSON.stringify({ topic, title, message: text, priority: 3, tags: ['satellite'] }) };
    }
    case 'gotify':
      return { url, body: JSON.stringify({ title, message: text, priority: 5 }) };
    case 'slack':
      return { url, body: JSON.stringify({ text: `*${title}*\n${text}` }) };
    case 'discord': {
      const content = `**${title}**\n${text}`;
      return { url, body: JSON.stringify({ username: 'netinventory', content: content.length > DISCORD_LIMIT ? `${content.slice(0, DISCORD_LIMIT - 1)}…` : content }) };
    }
    case 'teams':
      return {
        url,
        body: JSON.stringify({
          type: 'message',
          attachments: [{
            contentType: 'application/vnd.microsoft.card.adaptive',
            contentUrl: null,
            content: {
              $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4',
              body: [
                { type: 'TextBlock', text: title, weight: 'Bolder', size: 'Medium', wrap: true },
                ...lines.map((line) => ({ type: 'TextBlock', text: line, wrap: true, spacing: 'Small' })),
              ],
            },
          }],
        }),
      };
    default:
      return { url, body: JSON.stringify(payload) };
  }
}
