import { BaseSequencer, type TestSpecification } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** How many chaos files run before the whole-suite checks: 0 when one of those runs alone. */
    chaosFilesBefore: number;
  }
}

/**
 * Vitest's usual order, except that the whole-suite secrets check runs after every other file; it
 * is told how many files run before it, so an empty ledger after them fails instead of skipping.
 */
export class ChaosSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const last = (spec: TestSpecification) => (/zz-[^/]*\.test\.ts$/.test(spec.moduleId) ? 1 : 0);
    const before = sorted.filter((spec) => last(spec) === 0).length;
    for (const project of new Set(sorted.map((spec) => spec.project))) project.provide('chaosFilesBefore', before);
    return [...sorted].sort((a, b) => last(a) - last(b));
  }
}
