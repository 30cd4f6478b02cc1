// A toolbar button's panel (the map's Export menu, "+ Add"): it opens under its button but lives
// outside the toolbar holding the button (just after it, next in the tab order), fixed in the
// viewport: a toolbar's row may scroll sideways on a phone, and a box inside it would be cut to the
// row. Escape, a tap elsewhere or the focus leaving closes it; it follows its button while open.
import './popover.css';

export interface Popover {
  open(): void;
  close(focusToggle?: boolean): void;
  /** Closes it and takes its panel out of the page (the screen goes). */
  dispose(): void;
}

export interface PopoverOptions {
  /** Before it is shown: fill in what depends on the moment (its size follows). */
  opening?(): void;
  /** What gets the focus once it is shown. */
  focus?(): HTMLElement | undefined;
}

export function popover(toggle: HTMLElement, panel: HTMLElement, o: PopoverOptions = {}): Popover {
  panel.classList.add('popover');
  panel.hidden = true;
  toggle.setAttribute('aria-expanded', 'false');

  function place() {
    // Under the button, inside the viewport (a phone's 390 px included).
    const r = toggle.getBoundingClientRect();
    const width = Math.min(panel.offsetWidth || 320, window.innerWidth - 16);
    panel.style.left = `${Math.max(8, Math.min(r.left, window.innerWidth - width - 8))}px`;
    panel.style.top = `${r.bottom + 4}px`;
  }
  const inside = (node: EventTarget | null) => node instanceof Node && (panel.contains(node) || toggle.contains(node));
  const outside = (e: Event) => { if (!inside(e.target)) close(); };
  const follow = () => place();
  // Listening only while open: nothing is left behind when the screen goes with it closed.
  const listen = (on: boolean) => {
    const method = on ? 'addEventListener' : 'removeEventListener';
    document[method]('pointerdown', outside, true);
    document[method]('scroll', follow, true);
    window[method]('resize', follow);
  };
  function open() {
    // Mounted at each opening: the button may have moved (into the map toolbar's More on a phone).
    (toggle.closest('.toolbar') ?? toggle).after(panel);
    panel.hidden = false;
    toggle.setAttribute('aria-expanded', 'true');
    listen(true);
    o.opening?.();
    place();
    o.focus?.()?.focus();
  }
  function close(focusToggle = false) {
    if (panel.hidden) return;
    panel.hidden = true;
    toggle.setAttribute('aria-expanded', 'false');
    listen(false);
    if (focusToggle) toggle.focus();
  }
  toggle.addEventListener('click', () => (panel.hidden ? open() : close()));
  const onEscape = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && !panel.hidden) { e.preventDefault(); e.stopPropagation(); close(true); }
  };
  panel.addEventListener('keydown', onEscape);
  toggle.addEventListener('keydown', onEscape);
  panel.addEventListener('focusout', (e: FocusEvent) => { if (e.relatedTarget && !inside(e.relatedTarget)) close(); });
  return { open, close, dispose() { close(); panel.remove(); } };
}

