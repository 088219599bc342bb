import { z } from 'zod';
import { PRICING_MODES } from './enums.ts';
import { openApi } from './common.ts';
import { MAX_AMOUNT_MINOR } from './limits.ts';

/** A number of minor units a rule adds or sets: bounded so that every price computed stays exact. */
const RuleAmount = z.number().int().min(-MAX_AMOUNT_MINOR).max(MAX_AMOUNT_MINOR);

/** Reseller prices are the supplier's marked up by `value` percent (-100 < value <= 1000). */
export const PercentagePricingSchema = openApi(
  z.object({
    type: z.literal('percentage'),
    value: z
      .number()
      .gt(-100)
      .lte(1000)
      .describe('Markup in percent that the reseller adds on top of the supplier price.'),
  }).strict(),
  { title: 'PercentagePricing' },
);

const PriceRuleSchema = z.discriminatedUnion('op', [
  openApi(
    z.object({
      field: z.literal('price'),
      op: z.literal('multiply'),
      value: z.number().gt(0).lte(1000).describe('Factor applied to the unit price.'),
    }).strict(),
    { title: 'PriceMultiplyRule' },
  ),
  openApi(
    z.object({
      field: z.literal('price'),
      op: z.literal('add'),
      value: RuleAmount.describe(
        `Minor units added to the unit price (may be negative), -${MAX_AMOUNT_MINOR} to ${MAX_AMOUNT_MINOR}. A line priced by its total gets it once per item.`,
      ),
    }).strict(),
    { title: 'PriceAddRule' },
  ),
  openApi(
    z.object({
      field: z.literal('price'),
      op: z.literal('set'),
      value: RuleAmount.min(0).describe(`Unit price in minor units, 0 to ${MAX_AMOUNT_MINOR}.`),
    }).strict(),
    { title: 'PriceSetRule' },
  ),
]);

const TextRuleSchema = openApi(
  z.object({
    field: z.enum(['sku', 'title']),
    op: z.enum(['set', 'prefix', 'suffix']),
    value: z.string().max(200),
  }).strict(),
  { title: 'TextRule' },
);

export const PricingRuleSchema = openApi(z.union([PriceRuleSchema, TextRuleSchema]), { title: 'PricingRule' });

/** An ordered list of rules applied to each routed line. */
export const FieldRulesPricingSchema = openApi(
  z.object({
    type: z.literal('field_rules'),
    rules: z.array(PricingRuleSchema).max(50),
  }).strict(),
  { title: 'FieldRulesPricing' },
);

export const PricingConfigSchema = openApi(z.discriminatedUnion('type', [PercentagePricingSchema, FieldRulesPricingSchema]), {
  title: 'PricingConfig',
});
export const PricingModeSchema = z.enum(PRICING_MODES);

export type PricingConfig = z.infer<typeof PricingConfigSchema>;
export type PricingRule = z.infer<typeof PricingRuleSchema>;
export type PricingMode = z.infer<typeof PricingModeSchema>;
