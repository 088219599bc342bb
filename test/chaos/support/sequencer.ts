import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Vitest's usual order, except that the whole-suite secrets check runs after every other file. */
export class ChaosSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const last = (spec: TestSpecification) => (/zz-[^/]*\.test\.ts$/.test(spec.moduleId) ? 1 : 0);
    return [...sorted].sort((a, b) => last(a) - last(b));
  }
}
