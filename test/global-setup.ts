// Filled in by the foundation work: starts one embedded PostgreSQL for the whole run.
export default async function setup(): Promise<void> {}
