export interface PageQuery {
  limit: number;
  starting_after?: string | undefined;
  ending_before?: string | undefined;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
}
