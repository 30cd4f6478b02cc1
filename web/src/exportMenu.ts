// The map's Export menu (the toolbar's "Export" button): the whole map as a PNG at the size one
// picks (1×, 2×, 4× the map at 100 %, or a width in pixels), as an SVG with its icons and legend,
// as a draw.io diagram to edit, and the API's GraphML and Mermaid files. Every file is named by
// exportFileName, as the API names its exports.
// Its panel is a popover (popover.ts): outside the toolbar, fixed under the button, so at 390 px it
// is whole on screen.
import { h } from './dom.js';
import { popover } from './popover.js';
import './exportMenu.css';
import { FONT_FAMILY, toSvg, type ExportDrawing, type LegendModel, type SvgExport, type SvgOptions } from './exportSvg.js';

/** Larger than this the PNG is made smaller (a canvas this size is ~256 MB; Chromium refuses one side over 32,767 px). */
export const PNG_MAX_PIXELS = 64_000_000;
export const PNG_MAX_SIDE = 16_384;

/** A PNG's size: times the map at 100 %, or a width in pixels. */
export type PngSize = { scale: number } | { width: number };

let measurer: CanvasRenderingContext2D | null | undefined;
/** A text's width as the browser draws it (the SVG's font), for the SVG's wrapping and layout. */
export function measureText(text: string, px: number, bold: boolean): number {
  measurer ??= document.createElement('canvas').getContext('2d');
  if (!measurer) return text.length * px * 0.56;
  measurer.font = `${bold ? 'bold ' : ''}${px}px ${FONT_FAMILY}`;
  return measurer.measureText(text).width;
}

/** The pixel scale of a PNG of a drawing `width` × `height` at this size, kept within what a canvas holds. */
export function pngScale(size: PngSize, width: number, height: number): { scale: number; limited: boolean } {
  const wanted = 'scale' in size ? size.scale : size.width / width;
  const cap = Math.min(PNG_MAX_SIDE / width, PNG_MAX_SIDE / height, Math.sqrt(PNG_MAX_PIXELS / (width * height)));
  return wanted > cap ? { scale: cap, limited: true } : { scale: wanted, limited: false };
}

/**
 * The drawing as a PNG of this size: its SVG (exportSvg.ts) drawn onto a canvas, written at the
 * PNG's size (the SVG's width and height; the same viewBox), so the browser draws its vectors and
 * text at that size rather than enlarging a smaller bitmap.
 */
export async function pngOf(drawing: ExportDrawing, options: SvgOptions, size: PngSize): Promise<{ blob: Blob; width: number; height: number; limited: boolean; svg: SvgExport }> {
  const natural = toSvg(drawing, options);
  const { scale, limited } = pngScale(size, natural.width, natural.height);
  const width = Math.max(1, Math.round(natural.width * scale));
  const height = Math.max(1, Math.round(natural.height * scale));
  const svg = toSvg(drawing, { ...options, pixelScale: width / natural.width });
  const image = new Image();
  image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg.svg)}`;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  canvas.getContext('2d')!.drawImage(image, 0, 0, width, height);
  const blob = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, 'image/png'));
  canvas.width = canvas.height = 0; // its memory back at once
  if (!blob) throw new Error(`the browser could not make a ${width} × ${height} px image`);
  return { blob, width, height, limited, svg };
}

export interface ExportActions {
  /** The drawing as it is now (MapRenderer.exportDrawing), with the legend and title to write beside it. */
  drawing(): { drawing: ExportDrawing; legend: LegendModel; title: string } | undefined;
  png(size: PngSize): Promise<void>;
  svg(): void;
  drawio(): void;
  /** The API's exports of this view (GraphML, Mermaid): their addresses, or undefined while nothing is drawn. */
  apiExport(format: 'graphml' | 'mermaid'): string | undefined;
  /** An export that failed (shown to the user). */
  failed(err: unknown): void;
}

const px = (v: number) => Math.round(v).toLocaleString('en');

/** The toolbar's button (its panel opens outside the toolbar); `dispose` when the screen goes. */
export function exportMenu(actions: ExportActions): { button: HTMLElement; dispose(): void } {
  // A disclosure (its panel holds buttons, a form and links: not a menu of menuitems).
  const toggle = h('button', { type: 'button', id: 'export-menu', 'aria-expanded': 'false', 'aria-controls': 'export-panel' }, 'Export');
  const scales = [1, 2, 4];
  const scaleButtons = scales.map((scale) => h('button', { type: 'button', id: `export-png-${scale}x`, 'data-scale': scale, onclick: () => run(() => actions.png({ scale })) }, `${scale}×`));
  const widthInput = h('input', { type: 'number', id: 'export-png-width', min: 100, max: PNG_MAX_SIDE, step: 10, placeholder: '1920', inputmode: 'numeric', 'aria-label': 'PNG width in pixels' });
  const widthForm = h('form', {
    class: 'export-width', onsubmit: (e: SubmitEvent) => {
      e.preventDefault();
      const width = Math.round(Number(widthInput.value));
      if (!(width >= 100 && width <= PNG_MAX_SIDE)) {
        widthInput.setCustomValidity(`A width from 100 to ${PNG_MAX_SIDE.toLocaleString('en')} px`);
        widthInput.reportValidity();
        return;
      }
      widthInput.setCustomValidity('');
      run(() => actions.png({ width }));
    },
  }, h('label', { for: 'export-png-width' }, 'Width'), widthInput, h('span', { class: 'muted' }, 'px'), h('button', { type: 'submit', id: 'export-png-width-button' }, 'PNG'));
  const sizeNote = h('small', { class: 'muted', id: 'export-size' });
  const apiLink = (format: 'graphml' | 'mermaid', text: string) => h('a', { class: 'button', id: `export-${format}`, href: '#', download: '' }, text);
  const links = { graphml: apiLink('graphml', 'GraphML (yEd, Gephi)'), mermaid: apiLink('mermaid', 'Mermaid') };
  const panel = h('div', { class: 'export-panel', id: 'export-panel', role: 'group', 'aria-label': 'Export the map' },
    h('p', { class: 'export-heading' }, 'Image (PNG): the whole map, labels whole, with its legend'),
    h('div', { class: 'export-row', role: 'group', 'aria-label': 'PNG size' }, scaleButtons), sizeNote, widthForm,
    h('p', { class: 'export-heading' }, 'To edit or print at any size'),
    h('div', { class: 'export-row' },
      h('button', { type: 'button', id: 'export-svg', onclick: () => run(async () => actions.svg()) }, 'SVG (icons, legend)'),
      h('button', { type: 'button', id: 'export-drawio', onclick: () => run(async () => actions.drawio()) }, 'draw.io')),
    h('div', { class: 'export-row' }, links.graphml, links.mermaid));

  const menu = popover(toggle, panel, {
    opening() {
      // The PNG's sizes in pixels, from the drawing as it is now.
      const d = actions.drawing();
      if (d) {
        const { width, height } = toSvg(d.drawing, { legend: d.legend, title: d.title, measure: measureText });
        scales.forEach((scale, i) => {
          const s = pngScale({ scale }, width, height);
          scaleButtons[i]!.title = `${px(width * s.scale)} × ${px(height * s.scale)} px${s.limited ? ' (the largest image the browser makes)' : ''}`;
          scaleButtons[i]!.setAttribute('aria-label', `PNG ${scale}×, ${scaleButtons[i]!.title}`);
        });
        sizeNote.textContent = `1× is the map at 100 %: ${px(width)} × ${px(height)} px.`;
        widthInput.placeholder = String(Math.min(PNG_MAX_SIDE, Math.round(width * 2)));
      }
      for (const f of ['graphml', 'mermaid'] as const) {
        const href = actions.apiExport(f);
        links[f].hidden = !href;
        if (href) links[f].href = href;
      }
    },
    focus: () => scaleButtons[0],
  });
  function run(action: () => Promise<void>) {
    menu.close(true);
    action().catch((err) => actions.failed(err));
  }
  // A link followed (a download) closes it too.
  for (const a of Object.values(links)) a.addEventListener('click', () => menu.close());
  return {
    button: toggle,
    dispose: () => menu.dispose(),
  };
}
