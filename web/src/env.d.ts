// Stylesheets are imported for esbuild, which emits them beside the script.
declare module '*.css';
// Icons are imported as their SVG text (`with { type: 'text' }`), which esbuild bundles.
declare module '*.svg' {
  const svg: string;
  export default svg;
}
