// TypeScript looks for `<module>.d.mts` beside an `.mjs` file imported by a relative path: the
// types are in agentsim-adapter.d.ts.
export * from "./agentsim-adapter.js";
