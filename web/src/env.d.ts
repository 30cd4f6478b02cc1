// Stylesheets are imported for esbuild, which emits them beside the script.
declare module '*.css';
