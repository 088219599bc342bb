import { CompiledQuery, type Compilable } from 'kysely';

/** Stands for a value of a statement built once (`StatementShapes`): the value given at each call takes its place. */
export class Slot {
  constructor(readonly index: number) {}

  /** The slot typed as the value it stands for, where a builder checks types (`eb.val(slot.typed<Date>())`). */
  typed<T>(): T {
    return this as unknown as T;
  }
}

/** One slot per value of a statement, in the values' order. */
export type SlotsOf<V extends readonly unknown[]> = { readonly [K in keyof V]: Slot };

/** Where a statement runs: the ORM's Kysely instance or a transaction of it. */
interface Executor {
  executeQuery<R>(query: CompiledQuery<R>): Promise<{ rows: R[] }>;
}

const SLOTS = Array.from({ length: 16 }, (_, index) => new Slot(index));

/** Distinct shapes kept per cache; past it a shape is built at every call (as before), so the map cannot grow without bound. */
const MAX_SHAPES = 64;

/**
 * Statements whose text depends only on their shape (a key), not on their values: each shape is
 * built through Kysely's builder and compiled once, and each call puts its own values in the slots
 * it was built with. For the hot paths' big statements: building and compiling the attempt
 * transition statement (a dozen CTEs) at every call was about 6% of the worker's CPU.
 *
 * The key must name everything the text depends on; the values must be all that varies.
 */
export class StatementShapes {
  readonly #shapes = new Map<string, CompiledQuery>();

  /** The rows of the statement of shape `key` (built by `build` the first time, a slot standing for each value) run on `db` with `values` in its slots. */
  async rows<R, const V extends readonly unknown[]>(db: Executor, key: string, build: (slots: SlotsOf<V>) => Compilable<R>, values: V): Promise<R[]> {
    return (await db.executeQuery(this.#compiled(key, build, values))).rows;
  }

  /** The statement of shape `key` with `values` in its slots (see `rows`). */
  #compiled<R, const V extends readonly unknown[]>(key: string, build: (slots: SlotsOf<V>) => Compilable<R>, values: V): CompiledQuery<R> {
    if (values.length > SLOTS.length) throw new Error(`a statement shape takes at most ${SLOTS.length} values`);
    let template = this.#shapes.get(key);
    if (template === undefined) {
      template = build(SLOTS.slice(0, values.length) as unknown as SlotsOf<V>).compile();
      if (this.#shapes.size < MAX_SHAPES) this.#shapes.set(key, template);
    }
    const parameters = template.parameters.map((parameter) => (parameter instanceof Slot ? values[parameter.index] : parameter));
    return CompiledQuery.raw(template.sql, parameters as unknown[]) as CompiledQuery<R>;
  }

  /** How many shapes are kept (for tests). */
  get size(): number {
    return this.#shapes.size;
  }
}
