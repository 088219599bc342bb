import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * interface.md fixes some enums exactly (a client generated from openapi.json and written against
 * the interface switches over them exhaustively), so every schema of openapi.json that shows one of
 * those fields must carry exactly those values: not one more (a sync job is never `skipped`), not
 * one fewer. Each enum is read from interface.md itself (the resource tables of part 2) when the
 * spec is beside the checkout; `FIXED` is the same list for a checkout without it, and is checked
 * against the spec whenever the spec is there.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface FixedEnum {
  /** interface.md's resource section and its table's field. */
  section: string;
  field: string;
  values: string[];
  /** Properties every object showing this resource has (how a schema is recognised as one). */
  shape: string[];
}

const FIXED: FixedEnum[] = [
  { section: '2.1 Reseller store', field: 'platform', values: ['platform_a', 'platform_b', 'custom'], shape: ['id', 'ownerId', 'name', 'platform', 'shopDomain'] },
  { section: '2.2 Source store', field: 'platform', values: ['platform_a', 'platform_b', 'custom'], shape: ['id', 'resellerStoreId', 'vendorTag', 'platform'] },
  { section: '2.2 Source store', field: 'pricingMode', values: ['percentage', 'field_rules'], shape: ['id', 'resellerStoreId', 'vendorTag', 'pricingMode'] },
  {
    section: '2.3 Sync job',
    field: 'status',
    values: ['pending', 'processing', 'completed', 'failed', 'dead'],
    shape: ['id', 'resellerStoreId', 'sourceStoreId', 'externalOrderId', 'status'],
  },
];

function findSpec(): string | null {
  const candidates = [process.env.INTERFACE_MD, path.join(ROOT, '../shared/spec/interface.md'), path.join(ROOT, '../../shared/spec/interface.md')];
  return candidates.find((candidate): candidate is string => !!candidate && existsSync(candidate)) ?? null;
}

/** Every `enum` of part 2's resource tables: `enum: \`a\`, \`b\`` or `enum, see 2.2` (that section's field). */
function enumsOfSpec(markdown: string): { section: string; field: string; values: string[] }[] {
  const sections = [...markdown.matchAll(/^### (2\.\d+ [^\n]+)\n([\s\S]*?)(?=^#{2,3} )/gm)];
  const found: { section: string; field: string; values: string[]; see?: string }[] = [];
  for (const [, section, body] of sections) {
    for (const row of body!.split('\n').filter((line) => line.startsWith('|'))) {
      const cells = row.split('|').map((cell) => cell.trim());
      const field = cells[1]!;
      const note = cells.slice(2).find((cell) => /\benum\b/.test(cell));
      if (!note) continue;
      const see = /see (2\.\d+)/.exec(note)?.[1];
      const values = [...note.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
      found.push({ section: section!.trim(), field, values, ...(see && { see }) });
    }
  }
  return found.map(({ see, ...entry }) => {
    if (!see) return entry;
    const target = found.find((other) => other.section.startsWith(`${see} `) && other.field === entry.field);
    if (!target) throw new Error(`interface.md ${entry.section} ${entry.field} refers to ${see}, which has no such enum`);
    return { ...entry, values: target.values };
  });
}

type Schema = { $ref?: string; enum?: unknown[]; properties?: Record<string, Schema>; [key: string]: unknown };

const document = JSON.parse(readFileSync(path.join(ROOT, 'openapi.json'), 'utf8')) as Record<string, unknown>;

function resolve(schema: Schema): Schema {
  if (!schema.$ref) return schema;
  const target = schema.$ref.replace(/^#\//, '').split('/').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], document);
  return resolve(target as Schema);
}

/** Every object schema anywhere in the document (components, request bodies, responses, events), with where it is. */
function objectSchemas(): { at: string; schema: Schema }[] {
  const found: { at: string; schema: Schema }[] = [];
  const walk = (node: unknown, at: string) => {
    if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${at}[${i}]`));
    if (!node || typeof node !== 'object') return;
    const schema = node as Schema;
    if (schema.properties && typeof schema.properties === 'object') found.push({ at, schema });
    for (const [key, value] of Object.entries(schema)) walk(value, `${at}/${key}`);
  };
  walk(document, '#');
  return found;
}

describe('the enums interface.md fixes, in openapi.json', () => {
  it('are read from interface.md (when the spec is beside the checkout) exactly as this test lists them', ({ skip }) => {
    const spec = findSpec();
    if (!spec) return skip('interface.md is not beside this checkout; the list in this file stands for it');
    expect(enumsOfSpec(readFileSync(spec, 'utf8'))).toEqual(FIXED.map(({ section, field, values }) => ({ section, field, values })));
  });

  for (const { section, field, values, shape } of FIXED) {
    it(`${section} ${field}: exactly ${values.join(', ')} in every schema that shows it`, () => {
      const showing = objectSchemas().filter(({ schema }) => shape.every((property) => property in schema.properties!));
      // Components, the resource's responses and the events carrying it (at least its summary and detail).
      expect(showing.length).toBeGreaterThan(1);
      for (const { at, schema } of showing) {
        expect(resolve(schema.properties![field]!).enum, `${at}/properties/${field}`).toEqual(values);
      }
    });
  }

  it('sync job status: exactly the five in the list filter and the stats counts', () => {
    const [syncJobStatus] = FIXED.filter((entry) => entry.section.startsWith('2.3'));
    const paths = document.paths as Record<string, Record<string, { parameters?: { name: string; schema: Schema }[] }>>;
    const filter = paths['/v1/sync_jobs']!.get!.parameters!.find((parameter) => parameter.name === 'status')!;
    expect(resolve(filter.schema).enum).toEqual(syncJobStatus!.values);
    const stats = resolve({ $ref: '#/components/schemas/ResellerStoreStats' });
    expect(Object.keys(resolve(stats.properties!.syncJobs!).properties!)).toEqual(syncJobStatus!.values);
  });

  it('every property named platform or pricingMode, in requests as in responses, carries exactly its enum', () => {
    const byName = new Map(FIXED.filter((entry) => entry.field !== 'status').map((entry) => [entry.field, entry.values]));
    let checked = 0;
    for (const { at, schema } of objectSchemas()) {
      for (const [name, values] of byName) {
        const property = schema.properties![name];
        if (!property) continue;
        const enumValues = resolve(property).enum;
        // pricingConfig's variants name their mode in a `type` literal, not this field.
        expect(enumValues, `${at}/properties/${name}`).toEqual(values);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(4);
  });
});
