// The history slider under the toolbar: the instant shown, a step back or on (the slider is hard to
// move by one of its ~200 steps with a finger), what the ticks stand for, and Back to live. Built
// when a history is read, updated in place as the tick moves (the slider being dragged stays).
import { fill, h, when } from '../dom.js';
import { tickText, type MapAction, type MapState } from '../mapScreenState.js';

export function timeBarView(bar: HTMLElement, dispatch: (a: MapAction) => void) {
  const button = (label: string, onclick: () => void, attrs: Record<string, string> = {}) => h('button', { type: 'button', onclick, ...attrs }, label);
  let built: { ticks: string[]; slider: HTMLInputElement; label: HTMLOutputElement; previous: HTMLButtonElement; next: HTMLButtonElement } | undefined;
  const text = (s: MapState, k: number) => tickText(s.timeline!, k, when);

  function build(s: MapState) {
    const t = s.timeline!;
    const slider = h('input', { type: 'range', id: 'time-slider', min: 0, max: t.ticks.length - 1, step: 1, value: s.tick ?? t.ticks.length - 1, 'aria-label': 'Instant of the history' });
    // A tick standing for several changes says so (the state after all of them).
    const label = h('output', { for: 'time-slider', id: 'time-label' }, text(s, s.tick!));
    const previous = button('‹', () => dispatch({ type: 'tickStepped', by: -1 }), { id: 'time-previous', 'aria-label': 'Previous change', title: 'Previous change' });
    const next = button('›', () => dispatch({ type: 'tickStepped', by: 1 }), { id: 'time-next', 'aria-label': 'Next change', title: 'Next change' });
    slider.addEventListener('input', () => dispatch({ type: 'tickSeeked', tick: Number(slider.value) }));
    const total = (t.tick_changes ?? []).reduce((a, b) => a + b, 0);
    const grouped = (t.tick_changes ?? []).some((n) => n > 1);
    bar.hidden = false;
    fill(bar, h('label', { for: 'time-slider' }, 'History'), h('div', { class: 'time-steps' }, previous, slider, next), label,
      h('span', { class: 'muted', id: 'history-summary' }, grouped
        ? ` ${total.toLocaleString()} changes since ${when(t.ticks[0])}, in ${t.ticks.length - 1} steps (each the state after its changes; Compare shows them one by one)`
        : ` ${t.ticks.length} instants`),
      button('Back to live', () => dispatch({ type: 'timelineClosed' }), { id: 'history-live' }));
    built = { ticks: t.ticks, slider, label, previous, next };
  }

  let tick: number | undefined;
  return {
    render(s: MapState) {
      // The slider belongs to the map's history (a comparison draws its union without it).
      if (!s.timeline || s.mode !== 'map') {
        bar.hidden = true;
        built = undefined;
        return;
      }
      if (built?.ticks !== s.timeline.ticks) {
        build(s);
      } else if (s.tick !== tick) {
        const k = s.tick!;
        built.slider.value = String(k);
        built.label.textContent = text(s, k);
        built.slider.setAttribute('aria-valuetext', built.label.textContent);
      }
      tick = s.tick;
      built!.previous.toggleAttribute('disabled', s.tick! <= 0);
      built!.next.toggleAttribute('disabled', s.tick! >= s.timeline.ticks.length - 1);
    },
  };
}
