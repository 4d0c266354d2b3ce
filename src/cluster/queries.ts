import type { Rng } from '../core/rng.js';
import type { QueryKind } from '../run-format/config.js';

/**
 * Query templates from cheap to expensive over the generated `plb_items` table:
 * point lookup by primary key, a range aggregate over ~1% of the rows, and a scan with
 * group by over the whole table.
 */
export interface QueryInstance {
  kind: QueryKind;
  text: string;
  values: unknown[];
}

export function makeQuery(kind: QueryKind, rows: number, rng: Rng): QueryInstance {
  switch (kind) {
    case 'point':
      return {
        kind,
        text: 'SELECT id, grp, val, payload FROM plb_items WHERE id = $1',
        values: [rng.int(1, rows)],
      };
    case 'range': {
      const width = Math.max(10, Math.floor(rows / 100));
      const lo = rng.int(1, Math.max(1, rows - width));
      return {
        kind,
        text: 'SELECT count(*), avg(val), max(val) FROM plb_items WHERE id BETWEEN $1 AND $2',
        values: [lo, lo + width],
      };
    }
    case 'scan':
      return {
        kind,
        text: 'SELECT grp, count(*), avg(val) FROM plb_items WHERE val > $1 GROUP BY grp ORDER BY grp',
        values: [rng.next() * 0.5],
      };
  }
}
